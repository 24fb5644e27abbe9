#include "data/dataset.h"

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "data/data_error.h"

namespace ringlet::data {
namespace {

// Samples in the caller's memory, viewed.
class BufferSamples : public Dataset {
 public:
  BufferSamples(const std::string& name, int64_t n, const void* inputs,
                SampleSpec input, const void* targets, SampleSpec target,
                int64_t classes)
      : n_(n),
        inputs_(static_cast<const uint8_t*>(inputs)),
        targets_(static_cast<const uint8_t*>(targets)),
        input_(std::move(input)),
        target_(std::move(target)),
        classes_(classes) {
    if (n_ < 0 || input_.bytes() < 0 || target_.bytes() < 0 ||
        (n_ > 0 && ((inputs_ == nullptr && input_.bytes() > 0) ||
                    (targets_ == nullptr && target_.bytes() > 0)))) {
      throw DataError(name + ": " + std::to_string(n_) + " samples of " +
                      input_.Describe() + " -> " + target_.Describe() +
                      " need their buffers");
    }
    CheckClassIds(name, targets_, target_, n_, classes_);
    CheckFinite(name, inputs_, input_, 0, n_, "input");
    CheckFinite(name, targets_, target_, 0, n_, "target");
  }
  int64_t size() const override { return n_; }
  const SampleSpec& input() const override { return input_; }
  const SampleSpec& target() const override { return target_; }
  int64_t classes() const override { return classes_; }
  void Read(int64_t i, void* input, void* target) const override {
    std::memcpy(input, inputs_ + i * input_.bytes(), input_.bytes());
    std::memcpy(target, targets_ + i * target_.bytes(), target_.bytes());
  }

 private:
  int64_t n_;
  const uint8_t* inputs_;
  const uint8_t* targets_;
  SampleSpec input_, target_;
  int64_t classes_;
};

// Arrays held here, their samples viewed as BufferSamples views any.
struct OwnedArrays {
  Array inputs, targets;
};

// inputs [n, ...] and targets [n, ...]; throws DataError, naming `name`,
// unless they describe n samples each.
const OwnedArrays& CheckedArrays(const std::string& name,
                                 const OwnedArrays& a) {
  if (a.inputs.dims.empty() || a.targets.dims.empty()) {
    throw DataError(name + ": inputs " + a.inputs.Describe() + " and targets " +
                    a.targets.Describe() +
                    " need a first dimension, the samples");
  }
  if (a.inputs.dims[0] != a.targets.dims[0]) {
    throw DataError(name + ": " + std::to_string(a.inputs.dims[0]) +
                    " inputs but " + std::to_string(a.targets.dims[0]) +
                    " targets");
  }
  if (a.inputs.elements() * static_cast<int64_t>(ElementSize(a.inputs.type)) !=
          static_cast<int64_t>(a.inputs.bytes.size()) ||
      a.targets.elements() *
              static_cast<int64_t>(ElementSize(a.targets.type)) !=
          static_cast<int64_t>(a.targets.bytes.size())) {
    throw DataError(name + ": an array's bytes do not match its dims");
  }
  return a;
}

SampleSpec SampleOf(const Array& a) {
  return SampleSpec{a.type, {a.dims.begin() + 1, a.dims.end()}};
}

class ArraySamples : private OwnedArrays, public BufferSamples {
 public:
  ArraySamples(const std::string& name, Array inputs, Array targets,
               int64_t classes)
      : OwnedArrays{std::move(inputs), std::move(targets)},
        BufferSamples(name, CheckedArrays(name, *this).inputs.dims[0],
                      this->inputs.bytes.data(), SampleOf(this->inputs),
                      this->targets.bytes.data(), SampleOf(this->targets),
                      classes) {}
};

class SubsetSamples : public Dataset {
 public:
  SubsetSamples(DatasetPtr base, std::vector<int64_t> indices)
      : base_(std::move(base)), indices_(std::move(indices)) {
    for (int64_t i : indices_) {
      if (i < 0 || i >= base_->size()) {
        throw DataError("subset: sample " + std::to_string(i) +
                        " is outside a data set of " +
                        std::to_string(base_->size()));
      }
    }
  }
  int64_t size() const override {
    return static_cast<int64_t>(indices_.size());
  }
  const SampleSpec& input() const override { return base_->input(); }
  const SampleSpec& target() const override { return base_->target(); }
  int64_t classes() const override { return base_->classes(); }
  void Read(int64_t i, void* input, void* target) const override {
    base_->Read(indices_[i], input, target);
  }

 private:
  DatasetPtr base_;
  std::vector<int64_t> indices_;
};

class ConcatSamples : public Dataset {
 public:
  explicit ConcatSamples(std::vector<DatasetPtr> parts)
      : parts_(std::move(parts)) {
    if (parts_.empty()) throw DataError("concat: no data sets");
    for (const DatasetPtr& p : parts_) {
      if (!(p->input() == parts_[0]->input()) ||
          !(p->target() == parts_[0]->target()) ||
          p->classes() != parts_[0]->classes()) {
        throw DataError("concat: samples of " + p->input().Describe() + " -> " +
                        p->target().Describe() + " beside " +
                        parts_[0]->input().Describe() + " -> " +
                        parts_[0]->target().Describe() +
                        "; concatenate data sets of one kind");
      }
      ends_.push_back((ends_.empty() ? 0 : ends_.back()) + p->size());
    }
  }
  int64_t size() const override { return ends_.back(); }
  const SampleSpec& input() const override { return parts_[0]->input(); }
  const SampleSpec& target() const override { return parts_[0]->target(); }
  int64_t classes() const override { return parts_[0]->classes(); }
  void Read(int64_t i, void* input, void* target) const override {
    size_t p = 0;
    while (i >= ends_[p]) ++p;
    parts_[p]->Read(i - (p ? ends_[p - 1] : 0), input, target);
  }

 private:
  std::vector<DatasetPtr> parts_;
  std::vector<int64_t> ends_;
};

}  // namespace

DatasetPtr ArrayDataset(const std::string& name, Array inputs, Array targets,
                        int64_t classes) {
  return std::make_shared<ArraySamples>(name, std::move(inputs),
                                        std::move(targets), classes);
}

void CheckClassIds(const std::string& name, const void* targets,
                   const SampleSpec& target, int64_t samples, int64_t classes) {
  if (classes <= 0) return;
  const int64_t n = samples * target.elements();
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = 0;
    try {
      v = IntegerAt(targets, target.type, i);
    } catch (const std::invalid_argument&) {
      throw DataError(name + ": class targets must be integers, not " +
                      target.Describe());
    }
    if (v < 0 || v >= classes) {
      throw DataError(name + ": target " + std::to_string(i) + " is " +
                      std::to_string(v) + ", outside 0.." +
                      std::to_string(classes - 1));
    }
  }
}

namespace {

template <typename T>
int64_t FirstNonFinite(const void* values, int64_t n, double* value) {
  const T* v = static_cast<const T*>(values);
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i])) {
      *value = static_cast<double>(v[i]);
      return i;
    }
  }
  return -1;
}

}  // namespace

void CheckFinite(const std::string& name, const void* values,
                 const SampleSpec& spec, int64_t first, int64_t samples,
                 const char* what) {
  if (spec.type != ElementType::kFloat32 &&
      spec.type != ElementType::kFloat64) {
    return;
  }
  const int64_t per_sample = spec.elements();
  double value = 0;
  const int64_t at =
      spec.type == ElementType::kFloat32
          ? FirstNonFinite<float>(values, samples * per_sample, &value)
          : FirstNonFinite<double>(values, samples * per_sample, &value);
  if (at < 0) return;
  const std::string shown =
      std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
  throw DataError(name + ": sample " + std::to_string(first + at / per_sample) +
                  "'s " + what + " holds " + shown + " (element " +
                  std::to_string(at % per_sample) + " of " + spec.Describe() +
                  "); fix it, or drop such samples, e.g. keep = "
                  "np.isfinite(x).reshape(len(x), -1).all(axis=1); x, y = "
                  "x[keep], y[keep]");
}

DatasetPtr BufferDataset(const std::string& name, int64_t samples,
                         const void* inputs, SampleSpec input,
                         const void* targets, SampleSpec target,
                         int64_t classes) {
  return std::make_shared<BufferSamples>(name, samples, inputs,
                                         std::move(input), targets,
                                         std::move(target), classes);
}

// A view of another data set's samples under another input spec: the
// same bytes (a reshape), or each input's elements permuted from
// {H, W, C} to {C, H, W}.
class ReshapedInputs : public Dataset {
 public:
  ReshapedInputs(DatasetPtr base, std::vector<int64_t> shape,
                 bool channels_first)
      : base_(std::move(base)), channels_first_(channels_first) {
    input_ = base_->input();
    input_.shape = std::move(shape);
    if (input_.elements() != base_->input().elements()) {
      throw DataError("inputs " + base_->input().Describe() +
                      " cannot be seen as " + input_.Describe());
    }
  }
  int64_t size() const override { return base_->size(); }
  const SampleSpec& input() const override { return input_; }
  const SampleSpec& target() const override { return base_->target(); }
  int64_t classes() const override { return base_->classes(); }
  void Read(int64_t i, void* input, void* target) const override {
    if (!channels_first_) {
      base_->Read(i, input, target);
      return;
    }
    // Per thread: the loader reads samples from several.
    thread_local std::vector<char> hwc;
    const size_t width = ElementSize(input_.type);
    hwc.resize(input_.bytes());
    base_->Read(i, hwc.data(), target);
    const int64_t c = input_.shape[0], h = input_.shape[1], w = input_.shape[2];
    char* out = static_cast<char*>(input);
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        for (int64_t k = 0; k < c; ++k) {
          std::memcpy(out + ((k * h + y) * w + x) * width,
                      hwc.data() + ((y * w + x) * c + k) * width, width);
        }
      }
    }
  }

 private:
  DatasetPtr base_;
  SampleSpec input_;
  bool channels_first_;
};

DatasetPtr WithInputShape(DatasetPtr base, std::vector<int64_t> shape) {
  return std::make_shared<ReshapedInputs>(std::move(base), std::move(shape),
                                          false);
}

DatasetPtr ChannelsFirst(DatasetPtr base) {
  const std::vector<int64_t>& hwc = base->input().shape;
  if (hwc.size() != 3) {
    throw DataError("channels last: inputs " + base->input().Describe() +
                    " are not images {height, width, channels}");
  }
  return std::make_shared<ReshapedInputs>(
      base, std::vector<int64_t>{hwc[2], hwc[0], hwc[1]}, true);
}

DatasetPtr Subset(DatasetPtr base, std::vector<int64_t> indices) {
  return std::make_shared<SubsetSamples>(std::move(base), std::move(indices));
}

DatasetPtr Concat(std::vector<DatasetPtr> parts) {
  return std::make_shared<ConcatSamples>(std::move(parts));
}

std::pair<DatasetPtr, DatasetPtr> HoldOut(DatasetPtr base, double fraction,
                                          uint64_t seed) {
  if (!(fraction >= 0 && fraction <= 1)) {
    throw DataError("hold out: the fraction must lie in [0, 1]");
  }
  const int64_t n = base->size();
  const int64_t held = static_cast<int64_t>(std::llround(fraction * n));
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(order[i], order[rng() % static_cast<uint64_t>(i + 1)]);
  }
  std::vector<char> is_held(n, 0);
  for (int64_t i = 0; i < held; ++i) is_held[order[i]] = 1;
  std::vector<int64_t> kept_indices, held_indices;
  for (int64_t i = 0; i < n; ++i) {
    (is_held[i] ? held_indices : kept_indices).push_back(i);
  }
  return {Subset(base, std::move(kept_indices)),
          Subset(base, std::move(held_indices))};
}

}  // namespace ringlet::data
