#include "parallel/data_parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/collectives.h"
#include "gtest/gtest.h"
#include "nn/compute_options.h"
#include "nn/layers/init.h"
#include "nn/layers/layers.h"
#include "nn/models/resnet.h"
#include "nn/ops/autocast.h"
#include "nn/ops/loss.h"
#include "nn/testing/gradient_check.h"
#include "parallel/bf16_wire.h"
#include "parallel/testing/batches.h"

namespace ringlet::parallel {
namespace {

using testing::Batch;
using testing::Cpus;
using testing::RandomBatch;
using testing::Seeded;
using testing::Shards;
using testing::SmallNet;

// The reference: the same steps on one model with the whole batch.
void ReferenceSteps(nn::Module& net, const std::vector<Batch>& batches,
                    const nn::SgdOptions& sgd) {
  nn::Sgd optimizer(net.Parameters(), sgd);
  for (const Batch& b : batches) {
    net.ZeroGrad();
    nn::LossResult loss = nn::SoftmaxCrossEntropy(
        net.Forward(b.images), b.labels.data(), nn::Reduction::kSum);
    for (int64_t i = 0; i < loss.dlogits.numel(); ++i) {
      loss.dlogits.data()[i] /= b.size();
    }
    net.Backward(loss.dlogits);
    optimizer.Step();
  }
}

std::vector<nn::Tensor> State(nn::Module& net) {
  std::vector<nn::Tensor> out;
  for (nn::Parameter* p : net.Parameters()) out.push_back(p->value);
  for (nn::Buffer* b : net.Buffers()) out.push_back(b->value);
  return out;
}

// ||a - b|| <= rel_tol ||b|| for every tensor of the model's state, with an
// absolute floor of 1e-7: a convolution bias right before batch norm has a
// true gradient of zero, so its value is rounding noise (about 1e-8) that no
// relative bound can hold.
void ExpectStateNear(nn::Module& got, nn::Module& want, double rel_tol,
                     const std::string& what) {
  const std::vector<nn::Tensor> a = State(got), b = State(want);
  const std::vector<nn::Parameter*> names = want.Parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t t = 0; t < a.size(); ++t) {
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < b[t].numel(); ++i) {
      diff += std::pow(double(a[t].data()[i]) - b[t].data()[i], 2);
      norm += std::pow(double(b[t].data()[i]), 2);
    }
    const std::string name =
        t < names.size() ? names[t]->name : "buffer " + std::to_string(t);
    EXPECT_LE(std::sqrt(diff), rel_tol * std::sqrt(norm) + 1e-7)
        << what << ": " << name;
  }
}

void ExpectStateIdentical(nn::Module& a, nn::Module& b,
                          const std::string& what) {
  const std::vector<nn::Tensor> x = State(a), y = State(b);
  ASSERT_EQ(x.size(), y.size());
  for (size_t t = 0; t < x.size(); ++t) {
    EXPECT_EQ(
        std::memcmp(x[t].data(), y[t].data(), x[t].numel() * sizeof(float)), 0)
        << what << ": tensor " << t;
  }
}

std::vector<std::string> HostBackends() {
  std::vector<std::string> out;
  for (const std::string& b : collectives::AvailableBackends()) {
    if (b != "nccl") out.push_back(b);  // nccl needs GPUs.
  }
  return out;
}

// The chapter's central claim, with synchronised batch norm: k devices with
// the same global batch take the same step as one device. One step: a
// second one would compare gradients at parameters that already differ by
// rounding, and batch norm's 1/sqrt(var + eps) multiplies such differences
// by up to 300 in channels that are nearly constant (measured: 4e-5 after
// two steps on random data), which says nothing about data parallelism.
TEST(DataParallelTest, SyncBnResNet18StepOnKDevicesEqualsOneDevice) {
  const nn::SgdOptions sgd{0.1f, 0.9f, 0.0f};
  const std::vector<Batch> batches = {RandomBatch(7, 28, 1)};
  auto factory = Seeded([] { return nn::MakeResNet18(); }, 11);
  auto reference = factory();
  ReferenceSteps(*reference, batches, sgd);
  for (const std::string& backend : HostBackends()) {
    for (int k = 1; k <= 4; ++k) {
      DataParallelOptions options;
      options.backend = backend;
      options.optimizer = nn::FromSgd(sgd);
      options.sync_bn = true;
      DataParallel dp(factory, Cpus(k), options);
      for (const Batch& b : batches) dp.TrainStep(Shards(b, k));
      ExpectStateNear(dp.replica(0), *reference, 1e-6,
                      backend + " on " + std::to_string(k) + " devices");
      for (int d = 1; d < k; ++d) {
        ExpectStateIdentical(dp.replica(d), dp.replica(0), "replica");
      }
    }
  }
}

// The same under autocast (--precision=bf16), measured against the step
// itself: each tensor's change on k devices within 5% of its change on one
// device (a wrong gradient sum or scale would be off by the whole change),
// and the replicas bit for bit equal. Only the order of float32 sums over
// images differs between the splits, which moves some roundings to
// bfloat16 by a step; batch norm amplifies those (measured: 3e-6 of
// the change with oneDNN's kernels, up to 1% with the float32 reference
// kernels, whose per-image sums depend on the batch's size).
TEST(DataParallelTest, SyncBnResNet18StepUnderAutocastStaysNearOneDevice) {
  const auto bf16 =
      nn::ScopedCompute(&nn::ComputeOptions::autocast, nn::DType::kBFloat16);
  const nn::SgdOptions sgd{0.1f, 0.9f, 0.0f};
  const std::vector<Batch> batches = {RandomBatch(7, 28, 1)};
  auto factory = Seeded([] { return nn::MakeResNet18(); }, 11);
  auto initial = factory();
  auto reference = factory();
  ReferenceSteps(*reference, batches, sgd);
  auto plain = factory();
  {
    const auto fp32 =
        nn::ScopedCompute(&nn::ComputeOptions::autocast, nn::DType::kFloat32);
    ReferenceSteps(*plain, batches, sgd);
  }
  const std::vector<nn::Tensor> start = State(*initial),
                                want = State(*reference);
  const std::vector<nn::Parameter*> names = reference->Parameters();
  double worst = 0;
  for (int k : {2, 3}) {
    DataParallelOptions options;
    options.backend = "ring";
    options.optimizer = nn::FromSgd(sgd);
    options.sync_bn = true;
    DataParallel dp(factory, Cpus(k), options);
    for (const Batch& b : batches) dp.TrainStep(Shards(b, k));
    const std::vector<nn::Tensor> got = State(dp.replica(0));
    for (size_t t = 0; t < got.size(); ++t) {
      double diff = 0, change = 0;
      for (int64_t i = 0; i < got[t].numel(); ++i) {
        diff += std::pow(double(got[t].data()[i]) - want[t].data()[i], 2);
        change += std::pow(double(want[t].data()[i]) - start[t].data()[i], 2);
      }
      // Folded convolution biases do not change: nothing to compare.
      if (change == 0) continue;
      const double ratio = std::sqrt(diff / change);
      worst = std::max(worst, ratio);
      EXPECT_LE(ratio, 0.05)
          << k << " devices: "
          << (t < names.size() ? names[t]->name
                               : "buffer " + std::to_string(t));
    }
    for (int d = 1; d < k; ++d) {
      ExpectStateIdentical(dp.replica(d), dp.replica(0), "replica");
    }
  }
  std::printf("largest difference from one device: %.2g of the step\n", worst);
  // And the bfloat16 step is not the float32 one: autocast took effect.
  const std::vector<nn::Tensor> b = State(*plain);
  bool differs = false;
  for (size_t t = 0; t < want.size() && !differs; ++t) {
    differs = std::memcmp(want[t].data(), b[t].data(), want[t].nbytes()) != 0;
  }
  EXPECT_TRUE(differs);
}

TEST(DataParallelTest, SyncBnWithEmptyAndUnevenShardsEqualsOneDevice) {
  const nn::SgdOptions sgd{0.2f, 0.0f, 0.0f};
  for (int64_t batch : {3, 5, 9}) {  // 3 on 4 devices leaves one empty.
    const std::vector<Batch> batches = {RandomBatch(batch, 8, batch)};
    auto factory = Seeded(SmallNet, 5);
    auto reference = factory();
    ReferenceSteps(*reference, batches, sgd);
    DataParallelOptions options;
    options.optimizer = nn::FromSgd(sgd);
    options.sync_bn = true;
    DataParallel dp(factory, Cpus(4), options);
    const TrainStepStats stats = dp.TrainStep(Shards(batches[0], 4));
    EXPECT_EQ(stats.samples, batch);
    ExpectStateNear(dp.replica(0), *reference, 1e-6,
                    "batch " + std::to_string(batch));
  }
}

// A model without batch norm (whose statistics would see each micro-batch
// apart): flatten, linear, ReLU, linear.
std::unique_ptr<nn::Sequential> Mlp() {
  auto net = std::make_unique<nn::Sequential>();
  net->Add(std::make_unique<nn::Flatten>());
  net->Add(std::make_unique<nn::Linear>(64, 16));
  net->Add(std::make_unique<nn::ReLU>());
  net->Add(std::make_unique<nn::Linear>(16, 10));
  return net;
}

// `a` and `b` as one batch.
Batch Joined(const Batch& a, const Batch& b) {
  Batch out;
  out.images = nn::Tensor::Uninitialized({a.size() + b.size(), 1, 8, 8});
  std::memcpy(out.images.data(), a.images.data(),
              a.images.numel() * sizeof(float));
  std::memcpy(out.images.data() + a.images.numel(), b.images.data(),
              b.images.numel() * sizeof(float));
  out.labels = a.labels;
  out.labels.insert(out.labels.end(), b.labels.begin(), b.labels.end());
  return out;
}

// Gradient accumulation: two micro-batches of b samples take the step of
// one batch of 2b, on 1 and 2 devices, with SGD and AdamW (the gradients
// are summed across devices once; summing each micro-batch's would count
// the first twice).
TEST(DataParallelTest, AccumulatedMicroBatchesTakeTheWholeBatchStep) {
  const Batch a = RandomBatch(6, 8, 1), b = RandomBatch(5, 8, 2);
  const Batch whole = Joined(a, b);
  for (const char* optimizer : {"sgd", "adamw"}) {
    for (int k : {1, 2}) {
      DataParallelOptions options;
      options.optimizer.name = optimizer;
      options.optimizer.lr = std::string(optimizer) == "sgd" ? 0.5f : 0.01f;
      options.bucket_bytes = 256;  // Several buckets.
      const std::string what =
          std::string(optimizer) + " on " + std::to_string(k) + " devices";
      DataParallel accumulated(Seeded(Mlp, 4), Cpus(k), options);
      DataParallel reference(Seeded(Mlp, 4), Cpus(k), options);
      for (int step = 0; step < 2; ++step) {
        const TrainStepStats acc =
            accumulated.QueueStep({Shards(a, k), Shards(b, k)}).Finish();
        const TrainStepStats ref = reference.TrainStep(Shards(whole, k));
        EXPECT_EQ(acc.samples, 11) << what;
        EXPECT_NEAR(acc.loss_sum, ref.loss_sum, 1e-4 * ref.loss_sum) << what;
        EXPECT_EQ(acc.correct, ref.correct) << what;
      }
      ExpectStateNear(accumulated.replica(0), reference.replica(0), 1e-5, what);
      EXPECT_EQ(accumulated.CompareReplicas(), "") << what;
    }
  }
}

// Records the summed gradients the reducer hands to the update.
class RecordingOptimizer : public nn::Optimizer {
 public:
  explicit RecordingOptimizer(std::vector<std::vector<float>>* sums)
      : sums_(sums) {}
  void Step(const std::vector<const nn::Tensor*>& grads,
            const nn::NonFiniteCounts*) override {
    sums_->clear();
    for (const nn::Tensor* g : grads) {
      sums_->emplace_back(g->data(), g->data() + g->numel());
    }
  }
  void set_lr(float) override {}
  std::vector<std::pair<std::string, nn::Tensor*>> State() override {
    return {};
  }

 private:
  std::vector<std::vector<float>>* sums_;
};

float RoundToBf16(float x) {
  uint16_t bits;
  nn::FloatToBf16(&x, &bits, 1);
  float out;
  nn::Bf16ToFloat(&bits, &out, 1);
  return out;
}

// --grad_dtype=bf16 on two devices: every summed gradient is exactly the
// two shards' gradients cast to bfloat16, added in float32 and rounded
// once (the order of two terms does not matter), on every replica; with
// float32 on the wire it is their float32 sum, and the two differ.
TEST(DataParallelTest, Bf16GradientsOnTheWireAreTheRoundedSums) {
  const Batch b = RandomBatch(9, 8, 41);
  const std::vector<data::Shard> shards = Shards(b, 2);
  // Each shard's gradient, on a plain model: of its summed loss over the
  // batch's size, as DataParallel's replicas compute it.
  std::vector<std::vector<std::vector<float>>> shard_grads;
  for (const data::Shard& shard : shards) {
    auto net = Seeded(Mlp, 4)();
    net->ZeroGrad();
    std::vector<int32_t> ids;
    nn::LossResult loss = nn::SoftmaxCrossEntropy(
        net->Forward(ShardInputs(shard, nn::Device::Cpu())),
        data::ClassIds(shard, "test", &ids), nn::Reduction::kSum);
    for (int64_t i = 0; i < loss.dlogits.numel(); ++i) {
      loss.dlogits.data()[i] /= static_cast<float>(b.size());
    }
    net->Backward(loss.dlogits);
    shard_grads.emplace_back();
    for (nn::Parameter* p : net->Parameters()) {
      shard_grads.back().emplace_back(p->grad.data(),
                                      p->grad.data() + p->grad.numel());
    }
  }
  // [wire][replica]: what each replica's optimizer was given.
  std::vector<std::vector<float>> sums[2][2];
  for (int bf16 : {0, 1}) {
    std::mutex mu;
    std::vector<std::shared_ptr<std::vector<std::vector<float>>>> records;
    DataParallelOptions options;
    options.bucket_bytes = 256;  // Several buckets.
    options.grad_dtype = bf16 ? collectives::DataType::kBFloat16
                              : collectives::DataType::kFloat32;
    options.make_optimizer = [&](std::vector<nn::Tensor*>,
                                 std::vector<std::string>) {
      std::lock_guard<std::mutex> lock(mu);
      records.push_back(std::make_shared<std::vector<std::vector<float>>>());
      return std::make_unique<RecordingOptimizer>(records.back().get());
    };
    DataParallel dp(Seeded(Mlp, 4), Cpus(2), options);
    const TrainStepStats stats = dp.TrainStep(shards);
    ASSERT_EQ(stats.divergence, "");
    ASSERT_EQ(stats.samples, 9);
    int stepped = 0;
    for (const auto& record : records) {
      if (!record->empty() && stepped < 2) sums[bf16][stepped++] = *record;
    }
    ASSERT_EQ(stepped, 2) << "two replicas' optimizers step";
    ASSERT_EQ(sums[bf16][0], sums[bf16][1]) << "replicas disagree";
  }
  size_t rounded = 0;
  for (size_t t = 0; t < shard_grads[0].size(); ++t) {
    for (size_t i = 0; i < shard_grads[0][t].size(); ++i) {
      const float g0 = shard_grads[0][t][i], g1 = shard_grads[1][t][i];
      ASSERT_EQ(sums[0][0][t][i], g0 + g1) << "float32, tensor " << t;
      ASSERT_EQ(sums[1][0][t][i],
                RoundToBf16(RoundToBf16(g0) + RoundToBf16(g1)))
          << "bfloat16, tensor " << t << " element " << i;
      rounded += sums[1][0][t][i] != sums[0][0][t][i];
    }
  }
  EXPECT_GT(rounded, 0u) << "bfloat16 on the wire changed nothing";
}

TEST(DataParallelTest, Bf16OnTheWireIsRefusedForOtherTypes) {
  DataParallelOptions options;
  options.grad_dtype = collectives::DataType::kInt32;
  EXPECT_THROW(DataParallel(Seeded(Mlp, 4), Cpus(2), options),
               std::invalid_argument);
  try {
    CheckGradWire(collectives::DataType::kFloat64);
    FAIL() << "float64 on the wire accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("float32 or bfloat16, not float64"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(CheckGradWire(collectives::DataType::kBFloat16));
}

TEST(DataParallelTest, OneDeviceIsExactlyThePlainStep) {
  const nn::SgdOptions sgd{0.1f, 0.9f, 1e-4f};
  const std::vector<Batch> batches = {RandomBatch(6, 8, 1),
                                      RandomBatch(4, 8, 2)};
  auto factory = Seeded(SmallNet, 3);
  auto reference = factory();
  ReferenceSteps(*reference, batches, sgd);
  DataParallelOptions options;
  options.optimizer = nn::FromSgd(sgd);
  DataParallel dp(factory, {nn::Device::Cpu()}, options);
  double loss_sum = 0;
  for (const Batch& b : batches) {
    const TrainStepStats stats = dp.TrainStep(Shards(b, 1));
    loss_sum += stats.loss_sum;
    // One rank in the job: nothing to sum, so no time in communication.
    EXPECT_EQ(stats.comm_seconds, 0.0);
  }
  EXPECT_GT(loss_sum, 0);
  ExpectStateIdentical(dp.replica(0), *reference, "one device");
}

TEST(DataParallelTest, ReplicasStartFromTheFirstAndStayBitwiseIdentical) {
  std::atomic<uint64_t> seed{100};
  // Each replica is initialised differently; the broadcast must fix that.
  auto factory = [&seed] {
    auto net = SmallNet();
    nn::InitParameters(*net, nn::InitScheme::kKaimingNormal, seed++);
    return net;
  };
  DataParallelOptions options;
  options.optimizer = nn::FromSgd({0.05f, 0.9f, 0.0f});
  options.bucket_bytes = 256;  // Many buckets.
  DataParallel dp(factory, Cpus(3), options);
  for (int d = 1; d < 3; ++d) {
    ExpectStateIdentical(dp.replica(d), dp.replica(0), "after broadcast");
  }
  for (int step = 0; step < 30; ++step) {
    // Sizes 2..9: some steps leave a device without samples.
    const Batch b = RandomBatch(2 + step % 8, 8, 1000 + step);
    const TrainStepStats stats = dp.TrainStep(Shards(b, 3));
    ASSERT_EQ(stats.samples, b.size());
  }
  for (int d = 1; d < 3; ++d) {
    ExpectStateIdentical(dp.replica(d), dp.replica(0), "after 30 steps");
  }
}

TEST(DataParallelTest, BucketSizeDoesNotChangeTheResult) {
  // Two devices: each sum has two terms, exact in either order.
  const std::vector<Batch> batches = {RandomBatch(8, 8, 4),
                                      RandomBatch(7, 8, 5)};
  std::vector<std::unique_ptr<DataParallel>> runs;
  for (int64_t bucket_bytes : {int64_t{64}, int64_t{1} << 30}) {
    DataParallelOptions options;
    options.bucket_bytes = bucket_bytes;
    runs.push_back(
        std::make_unique<DataParallel>(Seeded(SmallNet, 9), Cpus(2), options));
    for (const Batch& b : batches) runs.back()->TrainStep(Shards(b, 2));
  }
  EXPECT_GT(runs[0]->num_buckets(), 5);
  EXPECT_EQ(runs[1]->num_buckets(), 1);
  ExpectStateIdentical(runs[0]->replica(0), runs[1]->replica(0), "buckets");
}

// Class ids as numpy saves them (int64) or as bytes train the default
// loss exactly as int32 ones.
TEST(DataParallelTest, Int64AndUint8ClassIdsTrainAsInt32Ones) {
  const Batch b = RandomBatch(9, 8, 6);
  const std::vector<int64_t> wide(b.labels.begin(), b.labels.end());
  const std::vector<uint8_t> bytes(b.labels.begin(), b.labels.end());
  std::vector<std::unique_ptr<DataParallel>> runs;
  for (int type = 0; type < 3; ++type) {
    DataParallelOptions options;
    runs.push_back(
        std::make_unique<DataParallel>(Seeded(SmallNet, 9), Cpus(2), options));
    std::vector<data::Shard> shards = Shards(b, 2);
    for (data::Shard& shard : shards) {
      const int64_t first = shard.targets.As<int32_t>("test") - b.labels.data();
      if (type == 1) shard.targets = data::SamplesOf(wide.data() + first, {});
      if (type == 2) shard.targets = data::SamplesOf(bytes.data() + first, {});
    }
    EXPECT_GT(runs.back()->TrainStep(shards).loss_sum, 0);
  }
  ExpectStateIdentical(runs[1]->replica(0), runs[0]->replica(0), "int64");
  ExpectStateIdentical(runs[2]->replica(0), runs[0]->replica(0), "uint8");
}

TEST(DataParallelTest, EvaluationCountsEveryShard) {
  DataParallelOptions options;
  DataParallel dp(Seeded(SmallNet, 2), Cpus(3), options);
  const Batch b = RandomBatch(10, 8, 8);
  // The one-model reference in evaluation mode.
  auto reference = Seeded(SmallNet, 2)();
  reference->SetTraining(false);
  const int64_t want =
      nn::SoftmaxCrossEntropy(reference->Forward(b.images), b.labels.data(),
                              nn::Reduction::kSum)
          .correct;
  EXPECT_EQ(dp.CountCorrect(Shards(b, 3)), want);
  EXPECT_TRUE(dp.replica(0).training());  // Back in training mode.
}

TEST(DataParallelTest, ABadShardFailsEveryDeviceWithTheCause) {
  DataParallelOptions options;
  options.comm.timeout = std::chrono::milliseconds(20000);
  DataParallel dp(Seeded(SmallNet, 2), Cpus(2), options);
  Batch b = RandomBatch(6, 8, 3);
  b.labels[5] = 12;  // Device 1's shard.
  const auto start = std::chrono::steady_clock::now();
  try {
    dp.TrainStep(Shards(b, 2));
    FAIL() << "expected an error";
  } catch (const nn::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("12"), std::string::npos) << e.what();
  }
  // Device 0 was released by the abort, not by the 20 s timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(DataParallelTest, BadArgumentsAreClearErrors) {
  DataParallelOptions options;
  EXPECT_THROW(DataParallel(Seeded(SmallNet, 1), {}, options), nn::DeviceError);
  try {
    DataParallel(Seeded(SmallNet, 1), {nn::Device::Cuda(0)}, options);
    FAIL() << "expected DeviceError";
  } catch (const nn::DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos);
  }
  options.backend = "carrier-pigeon";
  EXPECT_THROW(DataParallel(Seeded(SmallNet, 1), {nn::Device::Cpu()}, options),
               std::invalid_argument);
  try {
    DataParallel(Seeded(SmallNet, 1), {nn::Device::Cpu(0), nn::Device::Cpu(0)},
                 options);
    FAIL() << "expected DeviceError";
  } catch (const nn::DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("twice"), std::string::npos);
  }
  options.backend = "ring";
  DataParallel dp(Seeded(SmallNet, 1), Cpus(2), options);
  const Batch b = RandomBatch(4, 8, 1);
  EXPECT_THROW(dp.TrainStep(Shards(b, 3)), std::invalid_argument);
  EXPECT_THROW(dp.TrainStep({data::Shard(), data::Shard()}),
               std::invalid_argument);
}

// What a user writes: a model that is not nn's (no Sequential inside, so
// the reducer sums everything after backward), a loss of their own (half
// the squared error against one-hot labels, computed at once on the host)
// and an optimizer of their own (SGD that counts its steps).
class TwoLayerPerceptron : public nn::Module {
 public:
  nn::Tensor Forward(const nn::Tensor& x) override {
    return out_.Forward(relu_.Forward(hidden_.Forward(flat_.Forward(x))));
  }
  nn::Tensor Backward(const nn::Tensor& dy) override {
    return flat_.Backward(hidden_.Backward(relu_.Backward(out_.Backward(dy))));
  }
  std::string kind() const override { return "two_layer_perceptron"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<nn::Parameter*>* out) override {
    hidden_.CollectParameters(prefix + "hidden", out);
    out_.CollectParameters(prefix + "out", out);
  }
  std::vector<nn::Module*> Children() override {
    return {&flat_, &hidden_, &relu_, &out_};
  }

 private:
  nn::Flatten flat_;
  nn::Linear hidden_{64, 16};
  nn::ReLU relu_;
  nn::Linear out_{16, 10};
};

nn::PendingLoss HalfSquaredError(const nn::Tensor& output,
                                 const data::Shard& shard) {
  nn::LossResult r;
  r.dlogits = nn::Tensor::Uninitialized(output.shape());
  const int64_t classes = output.dim(1);
  std::vector<int32_t> storage;
  const int32_t* ids = data::ClassIds(shard, "test", &storage);
  for (int64_t i = 0; i < shard.count; ++i) {
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t at = i * classes + c;
      const float d = output.data()[at] - (c == ids[i] ? 1.0f : 0.0f);
      r.loss += 0.5 * d * d;
      r.dlogits.data()[at] = d;
    }
  }
  return nn::PendingLoss::Ready(std::move(r));
}

class CountingSgd : public nn::Optimizer {
 public:
  CountingSgd(std::vector<nn::Tensor*> values, std::atomic<int>* steps)
      : values_(std::move(values)), steps_(steps) {}
  void Step(const std::vector<const nn::Tensor*>& grads,
            const nn::NonFiniteCounts*) override {
    ++*steps_;
    for (size_t t = 0; t < values_.size(); ++t) {
      for (int64_t i = 0; i < values_[t]->numel(); ++i) {
        values_[t]->data()[i] -= lr_ * grads[t]->data()[i];
      }
    }
  }
  void set_lr(float lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, nn::Tensor*>> State() override {
    return {};
  }

 private:
  std::vector<nn::Tensor*> values_;
  std::atomic<int>* steps_;
  float lr_ = 0.05f;
};

TEST(DataParallelTest, AUsersModelLossAndOptimizerOnKDevicesEqualOneDevice) {
  const std::vector<Batch> batches = {
      RandomBatch(9, 8, 21), RandomBatch(9, 8, 22), RandomBatch(9, 8, 23)};
  const DataParallel::ModelFactory make = [] {
    auto model = std::make_unique<TwoLayerPerceptron>();
    nn::InitParameters(*model, nn::InitScheme::kKaimingNormal, 5);
    return model;
  };
  std::vector<std::unique_ptr<DataParallel>> runs;
  std::vector<double> losses;
  for (int k = 1; k <= 3; ++k) {
    std::atomic<int> steps{0};
    DataParallelOptions options;
    options.loss = HalfSquaredError;
    options.make_optimizer = [&steps](std::vector<nn::Tensor*> values,
                                      std::vector<std::string>) {
      return std::make_unique<CountingSgd>(std::move(values), &steps);
    };
    runs.push_back(std::make_unique<DataParallel>(make, Cpus(k), options));
    double loss = 0;
    for (const Batch& b : batches) {
      loss = runs.back()->TrainStep(Shards(b, k)).loss_sum;
    }
    losses.push_back(loss);
    EXPECT_EQ(steps.load(), 3 * k) << k << " devices";
    EXPECT_EQ(runs.back()->State(0).names,
              (std::vector<std::string>{"hidden.weight", "hidden.bias",
                                        "out.weight", "out.bias"}));
    for (int d = 1; d < k; ++d) {
      ExpectStateIdentical(runs.back()->replica(d), runs.back()->replica(0),
                           "replica " + std::to_string(d));
    }
    ExpectStateNear(runs.back()->replica(0), runs[0]->replica(0), 1e-6,
                    std::to_string(k) + " devices");
    EXPECT_NEAR(loss, losses[0], 1e-5 * losses[0]) << k << " devices";
  }
  // The step's loss is the caller's: the squared error of the untrained
  // model on that batch, which training brought down.
  DataParallelOptions options;
  options.loss = HalfSquaredError;
  DataParallel fresh(make, Cpus(1), options);
  const std::vector<data::Shard> last = Shards(batches[2], 1);
  const double untrained =
      HalfSquaredError(make()->Forward(batches[2].images), last[0])
          .Finish()
          .loss;
  EXPECT_DOUBLE_EQ(fresh.TrainStep(last).loss_sum, untrained);
  EXPECT_LT(losses[0], untrained);
}

// Half the squared error against float targets of any shape (each sample's
// target as many values as the output has columns).
nn::PendingLoss HalfSquaredErrorOfFloatTargets(const nn::Tensor& output,
                                               const data::Shard& shard) {
  const float* targets = shard.targets.As<float>("half squared error");
  nn::LossResult r;
  r.dlogits = nn::Tensor::Uninitialized(output.shape());
  for (int64_t at = 0; at < output.numel(); ++at) {
    const float d = output.data()[at] - targets[at];
    r.loss += 0.5 * d * d;
    r.dlogits.data()[at] = d;
  }
  return nn::PendingLoss::Ready(std::move(r));
}

// Targets of a shape and type of their own (a float vector a sample, as a
// regression has) reach the loss, each shard's own: the same steps as the
// class ids they encode, on 1 and 3 devices; the default loss refuses them.
TEST(DataParallelTest, FloatTargetsOfAnyShapeReachTheUsersLoss) {
  const Batch b = RandomBatch(11, 8, 31);
  std::vector<float> one_hot(b.size() * 10, 0.0f);
  for (int64_t i = 0; i < b.size(); ++i) one_hot[i * 10 + b.labels[i]] = 1;
  const DataParallel::ModelFactory make = [] {
    auto model = std::make_unique<TwoLayerPerceptron>();
    nn::InitParameters(*model, nn::InitScheme::kKaimingNormal, 5);
    return model;
  };
  for (int k : {1, 3}) {
    DataParallelOptions by_id, by_vector;
    by_id.loss = HalfSquaredError;
    by_vector.loss = HalfSquaredErrorOfFloatTargets;
    DataParallel ids(make, Cpus(k), by_id), vectors(make, Cpus(k), by_vector);
    std::vector<data::Shard> shards = Shards(b, k);
    const double id_loss = ids.TrainStep(shards).loss_sum;
    const data::Shard whole{b.size(), shards[0].inputs,
                            data::SamplesOf(one_hot.data(), {10})};
    const double vector_loss =
        vectors.TrainStep(data::ShardBatch(whole, k)).loss_sum;
    EXPECT_EQ(vector_loss, id_loss) << k << " devices";
    ExpectStateIdentical(vectors.replica(0), ids.replica(0),
                         std::to_string(k) + " devices");
  }
  DataParallel default_loss(make, Cpus(1), DataParallelOptions());
  const data::Shard floats{b.size(), Shards(b, 1)[0].inputs,
                           data::SamplesOf(one_hot.data(), {10})};
  try {
    default_loss.TrainStep({floats});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "softmax cross-entropy takes one class id a sample (uint8, "
                  "int32 or int64) as targets; these are float32 {10}"),
              std::string::npos)
        << e.what();
  }
}

// The library's regression and multi-label losses through DataParallel:
// k devices take one device's step, and the step's loss is the batch's mean
// of the op's per-sample losses.
TEST(DataParallelTest, MeanSquaredAndBinaryCrossEntropyLossesOnKDevices) {
  const Batch b = RandomBatch(10, 8, 51);
  std::vector<float> targets(b.size() * 10);
  for (size_t i = 0; i < targets.size(); ++i) targets[i] = (i * 7 % 10) < 3;
  const DataParallel::ModelFactory make = [] {
    auto model = std::make_unique<TwoLayerPerceptron>();
    nn::InitParameters(*model, nn::InitScheme::kKaimingNormal, 5);
    return model;
  };
  for (const auto& [name, loss] :
       std::vector<std::pair<std::string, LossFunction>>{
           {"mse", MeanSquaredErrorLoss()},
           {"bce", BinaryCrossEntropyWithLogitsLoss()}}) {
    const data::Shard whole{b.size(), Shards(b, 1)[0].inputs,
                            data::SamplesOf(targets.data(), {10})};
    const nn::Tensor out = make()->Forward(b.images);
    const double want =
        (name == "mse"
             ? nn::MeanSquaredError(out, targets.data(), nn::Reduction::kMean)
             : nn::BinaryCrossEntropyWithLogits(out, targets.data(),
                                                nn::Reduction::kMean))
            .loss;
    std::vector<std::unique_ptr<DataParallel>> runs;
    for (int k : {1, 3}) {
      DataParallelOptions options;
      options.loss = loss;
      runs.push_back(std::make_unique<DataParallel>(make, Cpus(k), options));
      const TrainStepStats stats =
          runs.back()->TrainStep(data::ShardBatch(whole, k));
      EXPECT_NEAR(stats.loss_sum / b.size(), want, 1e-6) << name << " " << k;
    }
    ExpectStateNear(runs[1]->replica(0), runs[0]->replica(0), 1e-6,
                    name + ", 3 devices against 1");
  }
  // Targets that do not match the output are named.
  DataParallelOptions options;
  options.loss = MeanSquaredErrorLoss();
  DataParallel dp(make, Cpus(1), options);
  const data::Shard short_targets{b.size(), Shards(b, 1)[0].inputs,
                                  data::SamplesOf(targets.data(), {3})};
  try {
    dp.TrainStep({short_targets});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the model gives 10 values a sample, "
                                         "the targets are float32 {3}"),
              std::string::npos)
        << e.what();
  }
}

// Backward assigns new tensors to its gradients before its layers add
// into them: they are no longer views into the reducer's buckets, which
// must then copy them in and out. (Once a layer has reported a gradient,
// Parameter::on_grad_ready, the reducer may be summing it: a module must
// not touch it again in that backward.)
class GradientReplacingPerceptron : public TwoLayerPerceptron {
 public:
  nn::Tensor Backward(const nn::Tensor& dy) override {
    for (nn::Parameter* p : Parameters()) p->grad = p->grad.Clone();
    return TwoLayerPerceptron::Backward(dy);
  }
};

TEST(DataParallelTest, AModuleReplacingItsGradientsStillGetsTheSums) {
  const std::vector<Batch> batches = {RandomBatch(8, 8, 31),
                                      RandomBatch(8, 8, 32)};
  const auto train = [&](bool replacing, int k) {
    const DataParallel::ModelFactory make = [replacing]() {
      std::unique_ptr<nn::Module> model;
      if (replacing) {
        model = std::make_unique<GradientReplacingPerceptron>();
      } else {
        model = std::make_unique<TwoLayerPerceptron>();
      }
      nn::InitParameters(*model, nn::InitScheme::kKaimingNormal, 6);
      return model;
    };
    auto dp =
        std::make_unique<DataParallel>(make, Cpus(k), DataParallelOptions());
    for (const Batch& b : batches) dp->TrainStep(Shards(b, k));
    return dp;
  };
  const auto in_place = train(false, 2);
  const auto replacing = train(true, 2);
  const auto alone = train(true, 1);
  ExpectStateIdentical(replacing->replica(0), in_place->replica(0),
                       "replacing against in place, 2 devices");
  ExpectStateIdentical(replacing->replica(1), replacing->replica(0),
                       "replica 1");
  ExpectStateNear(replacing->replica(0), alone->replica(0), 1e-6,
                  "2 devices against 1");
}

TEST(DataParallelTest, AShardWithoutItsInputShapeIsAShapeError) {
  DataParallel dp(Seeded(SmallNet, 1), Cpus(1), DataParallelOptions());
  const Batch b = RandomBatch(2, 8, 1);
  std::vector<data::Shard> shards = Shards(b, 1);
  shards[0].inputs.shape.clear();
  try {
    dp.TrainStep(shards);
    FAIL() << "expected ShapeError";
  } catch (const nn::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("no input shape"), std::string::npos)
        << e.what();
  }
}

TEST(DataParallelTest, AFactoryGivingDifferentModelsIsAnErrorNotAHang) {
  // Replica 1 gets a wider hidden layer: the first broadcast cannot match.
  std::atomic<int> calls{0};
  const DataParallel::ModelFactory uneven = [&calls] {
    auto net = std::make_unique<nn::Sequential>();
    net->Add(std::make_unique<nn::Flatten>());
    net->Add(std::make_unique<nn::Linear>(64, calls++ == 0 ? 8 : 9));
    return net;
  };
  DataParallelOptions options;
  options.comm.timeout = std::chrono::milliseconds(20000);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(DataParallel(uneven, Cpus(2), options),
               collectives::CollectiveError);
  // Found by the calls' envelopes, not by the 20 s timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(DataParallelTest, NullFactoriesAreClearErrors) {
  DataParallelOptions options;
  EXPECT_THROW(DataParallel([] { return std::unique_ptr<nn::Module>(); },
                            Cpus(2), options),
               std::invalid_argument);
  options.make_optimizer = [](std::vector<nn::Tensor*>,
                              std::vector<std::string>) {
    return std::unique_ptr<nn::Optimizer>();
  };
  EXPECT_THROW(DataParallel(Seeded(SmallNet, 1), Cpus(2), options),
               std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::parallel
