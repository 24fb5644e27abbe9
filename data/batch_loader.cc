#include "data/batch_loader.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "data/data_error.h"

namespace ringlet::data {
namespace {

// pixel / 255.0f for every byte value, computed once: a table lookup is the
// cheapest exact conversion and gives the same bits as torch's div(255).
const std::array<float, 256>& PixelToFloat() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[v] = static_cast<float>(v) / 255.0f;
    return t;
  }();
  return table;
}

// n values of `type` at src as float32; uint8 ones scaled to [0, 1].
void ToFloat(ElementType type, const uint8_t* src, int64_t n, float* dst) {
  switch (type) {
    case ElementType::kUint8: {
      const std::array<float, 256>& to_float = PixelToFloat();
      for (int64_t i = 0; i < n; ++i) dst[i] = to_float[src[i]];
      return;
    }
    case ElementType::kFloat32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    default:
      break;
  }
  if (type == ElementType::kFloat64) {
    for (int64_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, src + 8 * i, 8);
      dst[i] = static_cast<float>(v);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = static_cast<float>(IntegerAt(src, type, i));
  }
}

// A Fashion-MNIST split seen as a data set, without copying it.
class SplitSamples : public Dataset {
 public:
  explicit SplitSamples(std::shared_ptr<const Split> split)
      : split_(std::move(split)) {}
  int64_t size() const override { return split_->size(); }
  const SampleSpec& input() const override { return input_; }
  const SampleSpec& target() const override { return target_; }
  int64_t classes() const override { return kNumClasses; }
  void Read(int64_t i, void* input, void* target) const override {
    std::memcpy(input, split_->image(i), kImagePixels);
    std::memcpy(target, &split_->labels[i], sizeof(int32_t));
  }

 private:
  const std::shared_ptr<const Split> split_;
  const SampleSpec input_{ElementType::kUint8, {1, kImageRows, kImageCols}};
  const SampleSpec target_{ElementType::kInt32, {}};
};

// Mixes seed and epoch into one well-spread 64-bit value (a splitmix64
// step), so neighbouring seeds or epochs give unrelated orders.
uint64_t MixSeed(uint64_t seed, int64_t epoch) {
  return SampleRng(seed +
                   0x9e3779b97f4a7c15ull * static_cast<uint64_t>(epoch))();
}

}  // namespace

void Batch::CheckTargetType(ElementType wanted) const {
  if (target.type != wanted) {
    throw DataError(std::string("the batch's targets are ") +
                    target.Describe() + ", not " + ToString(wanted));
  }
}

LocalBatch Batch::Local() const {
  return CutBatch(
      size, layout,
      SampleArray{{ElementType::kFloat32, input_shape}, inputs.data()},
      SampleArray{target, targets.data()});
}

DatasetPtr SplitDataset(std::shared_ptr<const Split> split) {
  return std::make_shared<SplitSamples>(std::move(split));
}

DatasetPtr SplitDataset(const Split& split) {
  // Not owned: the caller keeps it alive.
  return SplitDataset(
      std::shared_ptr<const Split>(&split, [](const Split*) {}));
}

BatchLoader::BatchLoader(DatasetPtr data, const LoaderOptions& options)
    : data_(std::move(data)), options_(options) {
  if (options.batch_size < 1) {
    throw std::invalid_argument("batch size must be at least 1, got " +
                                std::to_string(options.batch_size));
  }
  if (options.prefetch < 0) {
    throw std::invalid_argument("prefetch must not be negative, got " +
                                std::to_string(options.prefetch));
  }
  options.layout.Check("loader");
  const int64_t n = data_->size();
  // n / b, plus one for a partial batch: (n + b - 1) / b overflows for a
  // batch size near the largest int64.
  batches_per_epoch_ = n / options.batch_size +
                       (!options.drop_last && n % options.batch_size != 0);
  if (options.prefetch > 0) {
    producer_ = std::thread([this] { ProducerLoop(); });
  }
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (producer_.joinable()) producer_.join();
}

std::shared_ptr<const BatchLoader::EpochPlan> BatchLoader::MakePlan(
    int64_t epoch) const {
  auto plan = std::make_shared<EpochPlan>();
  plan->epoch = epoch;
  const int64_t n = data_->size();
  plan->order.resize(n);
  for (int64_t i = 0; i < n; ++i) plan->order[i] = i;
  if (options_.shuffle) {
    // Fisher-Yates with mt19937_64, whose output the standard fixes (unlike
    // std::shuffle's), so an order is the same with every compiler. The
    // modulo bias is below n / 2^64, far under anything measurable.
    std::mt19937_64 rng(MixSeed(options_.seed, epoch));
    for (int64_t i = n - 1; i > 0; --i) {
      const int64_t j =
          static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
      std::swap(plan->order[i], plan->order[j]);
    }
  }
  return plan;
}

void BatchLoader::Fill(const EpochPlan& plan, int64_t index,
                       Batch* batch) const {
  const int64_t begin = index * options_.batch_size;
  const int64_t size =
      std::min<int64_t>(options_.batch_size, data_->size() - begin);
  const SampleSpec& in = data_->input();
  const int64_t in_elements = in.elements();
  const int64_t target_bytes = data_->target().bytes();
  const Range mine = options_.layout.LocalSamples(size);
  const int64_t first = mine.begin, held = mine.end - mine.begin;
  batch->epoch = plan.epoch;
  batch->index = index;
  batch->size = size;
  batch->first = first;
  batch->held = held;
  batch->layout = options_.layout;
  batch->input_shape = in.shape;
  batch->target = data_->target();
  batch->inputs.resize(held * in_elements);
  batch->targets.resize(held * target_bytes);
  std::vector<uint8_t> raw(in.bytes());
  for (int64_t i = 0; i < held; ++i) {
    const int64_t sample = plan.order[begin + first + i];
    data_->Read(sample, raw.data(), batch->targets.data() + i * target_bytes);
    float* input = batch->inputs.data() + i * in_elements;
    ToFloat(in.type, raw.data(), in_elements, input);
    if (!options_.transforms.empty()) {
      SampleRng rng = RngFor(options_.seed, plan.epoch, sample);
      for (const Transform& t : options_.transforms) t(input, in.shape, rng);
    }
  }
}

void BatchLoader::StartEpoch(int64_t epoch, int64_t first_batch) {
  if (first_batch < 0 || first_batch > batches_per_epoch_) {
    throw std::invalid_argument(
        "batch " + std::to_string(first_batch) + " is outside an epoch of " +
        std::to_string(batches_per_epoch_) + " batches");
  }
  std::shared_ptr<const EpochPlan> plan = MakePlan(epoch);
  {
    std::lock_guard<std::mutex> lock(mu_);
    plan_ = std::move(plan);
    ++generation_;
    produced_ = first_batch;
    consumed_ = first_batch;
    failed_ = nullptr;
    while (!ready_.empty()) {
      spare_.push_back(std::move(ready_.front()));
      ready_.pop_front();
    }
  }
  changed_.notify_all();
}

bool BatchLoader::Next(Batch* batch) {
  std::unique_lock<std::mutex> lock(mu_);
  if (plan_ == nullptr) {
    throw std::logic_error("BatchLoader::Next called before StartEpoch");
  }
  if (consumed_ == batches_per_epoch_) return false;

  if (options_.prefetch == 0) {
    const int64_t index = consumed_;
    std::shared_ptr<const EpochPlan> plan = plan_;
    lock.unlock();
    Fill(*plan, index, batch);  // A batch that throws stays the next one.
    lock.lock();
    ++consumed_;
    return true;
  }

  changed_.wait(lock, [this] { return !ready_.empty() || failed_; });
  if (ready_.empty()) {
    // The batch due next could not be made: its error is the caller's, on
    // the caller's thread. Until the next StartEpoch, every call says so.
    std::rethrow_exception(failed_);
  }
  std::swap(*batch, ready_.front());
  spare_.push_back(std::move(ready_.front()));  // The caller's old buffers.
  ready_.pop_front();
  ++consumed_;
  lock.unlock();
  changed_.notify_all();
  return true;
}

void BatchLoader::ProducerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [this] {
      return stopping_ ||
             (plan_ != nullptr && !failed_ && produced_ < batches_per_epoch_ &&
              static_cast<int>(ready_.size()) < options_.prefetch);
    });
    if (stopping_) return;

    const uint64_t generation = generation_;
    const int64_t index = produced_++;
    std::shared_ptr<const EpochPlan> plan = plan_;
    Batch batch;
    if (!spare_.empty()) {
      batch = std::move(spare_.back());
      spare_.pop_back();
    }
    lock.unlock();
    std::exception_ptr error;
    try {
      Fill(*plan, index, &batch);
    } catch (...) {
      // An exception leaving this thread would end the process
      // (std::terminate): Next() rethrows it instead.
      error = std::current_exception();
    }
    lock.lock();
    if (error != nullptr) {
      if (generation == generation_) failed_ = error;
      spare_.push_back(std::move(batch));
      changed_.notify_all();
      continue;
    }
    if (generation == generation_) {
      ready_.push_back(std::move(batch));
      changed_.notify_all();
    } else {
      spare_.push_back(std::move(batch));  // StartEpoch ran meanwhile.
    }
  }
}

}  // namespace ringlet::data
