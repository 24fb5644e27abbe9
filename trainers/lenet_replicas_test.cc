#include "trainers/lenet_replicas.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>

#include "collectives/collectives.h"
#include "gpu/device_probe.h"
#include "gtest/gtest.h"
#include "nn/compute_options.h"
#include "nn/gpu_precision.h"
#include "nn/ops/loss.h"
#include "nn/optim/adam_optimizer.h"
#include "nn/optim/grad_clip.h"
#include "nn/optim/sgd.h"

namespace ringlet::trainers {
namespace {

struct Batch {
  std::vector<float> images;
  std::vector<int32_t> labels;
  int64_t size() const { return labels.size(); }
};

Batch RandomBatch(int64_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  Batch b;
  for (int64_t i = 0; i < n * 784; ++i) b.images.push_back(pixel(gen));
  for (int64_t i = 0; i < n; ++i) b.labels.push_back(gen() % 10);
  return b;
}

// split_batch: contiguous shards, sizes differing by at most one.
std::vector<data::Shard> Shards(const Batch& b, int k) {
  return data::ShardBatch(
      data::Shard{b.size(), data::SamplesOf(b.images.data(), {1, 28, 28}),
                  data::SamplesOf(b.labels.data(), {})},
      k);
}

std::vector<nn::Device> Cpus(int k) {
  std::vector<nn::Device> out;
  for (int i = 0; i < k; ++i) out.push_back(nn::Device::Cpu(i));
  return out;
}

// The chapter's step on one device with the whole batch.
void ReferenceStep(nn::LeNetParams& params, const Batch& b, float lr) {
  nn::Tensor x = nn::Tensor::Uninitialized({b.size(), 1, 28, 28});
  std::memcpy(x.data(), b.images.data(), b.images.size() * sizeof(float));
  nn::LeNetActivations acts;
  const nn::Tensor logits = nn::LeNetForward(params, x, &acts);
  const nn::LossResult loss =
      nn::SoftmaxCrossEntropy(logits, b.labels.data(), nn::Reduction::kSum);
  nn::LeNetParams grads = nn::LeNetBackward(params, acts, loss.dlogits);
  const std::vector<nn::Tensor*> p = params.All(), g = grads.All();
  for (size_t t = 0; t < p.size(); ++t) {
    for (int64_t i = 0; i < p[t]->numel(); ++i) {
      p[t]->data()[i] -= lr * g[t]->data()[i] / b.size();
    }
  }
}

// ||got - want|| <= rel_tol ||want|| per tensor (host tensors).
void ExpectNear(const std::vector<const nn::Tensor*>& a,
                const std::vector<const nn::Tensor*>& b, double rel_tol,
                const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t t = 0; t < a.size(); ++t) {
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < b[t]->numel(); ++i) {
      diff += std::pow(double(a[t]->data()[i]) - b[t]->data()[i], 2);
      norm += std::pow(double(b[t]->data()[i]), 2);
    }
    EXPECT_LE(std::sqrt(diff), rel_tol * std::sqrt(norm))
        << what << ", parameter " << t;
  }
}

void ExpectIdentical(const nn::LeNetParams& a, const nn::LeNetParams& b,
                     const std::string& what) {
  const std::vector<const nn::Tensor*> x = a.All(), y = b.All();
  for (size_t t = 0; t < x.size(); ++t) {
    EXPECT_EQ(
        std::memcmp(x[t]->data(), y[t]->data(), x[t]->numel() * sizeof(float)),
        0)
        << what << ", parameter " << t;
  }
}

std::vector<std::string> HostBackends() {
  std::vector<std::string> out;
  for (const std::string& b : collectives::AvailableBackends()) {
    if (b != "nccl") out.push_back(b);
  }
  return out;
}

// The chapter's central claim: with the same global batch, k replicas on
// place(k) take the same steps as one device, within rel_tol, and stay
// bitwise identical.
void ExpectKReplicasTakeTheOneDeviceSteps(
    const std::function<std::vector<nn::Device>(int)>& place,
    const std::vector<std::string>& backends, double rel_tol) {
  const float lr = 0.2f;
  // 64 splits evenly over 1, 2 and 4 devices; 61 does not; 3 leaves a
  // device with nothing on 4 devices.
  const std::vector<Batch> batches = {RandomBatch(64, 1), RandomBatch(61, 2),
                                      RandomBatch(3, 3)};
  const nn::LeNetParams init =
      nn::LeNetParams::Init(7, nn::InitScheme::kKaimingNormal);
  nn::LeNetParams reference = init.Clone();
  for (const Batch& b : batches) ReferenceStep(reference, b, lr);
  const nn::LeNetParams& want = reference;
  for (const std::string& backend : backends) {
    for (int k = 1; k <= 4; ++k) {
      parallel::ReplicaGroupOptions options;
      options.backend = backend;
      LeNetReplicas replicas(init, place(k), options, PlainSgd(lr));
      for (const Batch& b : batches) {
        const parallel::TrainStepStats stats = replicas.TrainStep(Shards(b, k));
        EXPECT_EQ(stats.samples, b.size());
        EXPECT_GT(stats.loss_sum, 0);
        EXPECT_EQ(stats.divergence, "");
        // One device is the whole job: nothing to sum, no communication.
        if (k == 1) {
          EXPECT_EQ(stats.comm_seconds, 0.0);
        }
      }
      const std::string what = backend + " on " + std::to_string(k);
      EXPECT_EQ(replicas.CompareReplicas(), "") << what;
      // State(): host copies wherever the replicas are.
      ExpectNear(replicas.State().tensors, want.All(), rel_tol, what);
    }
  }
}

TEST(LeNetReplicasTest, KDevicesTakeTheOneDeviceSteps) {
  ExpectKReplicasTakeTheOneDeviceSteps(Cpus, HostBackends(), 1e-6);
}

// 1-4 replicas sharing one GPU (ring and naive): within cuDNN's rounding of
// the CPU reference. Skips, with the reason, without a GPU.
TEST(LeNetReplicasTest, ReplicasOnOneGpuTakeTheOneDeviceSteps) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
  const nn::Device gpu = nn::Device::Cuda(report.usable[0]);
  ExpectKReplicasTakeTheOneDeviceSteps(
      [gpu](int k) { return std::vector<nn::Device>(k, gpu); },
      {"ring", "naive"}, 1e-4);
}

// Reproducible steps (micro_shards): the parameters and optimizer state
// after three steps (uneven micro-shards, then one empty) are the same
// bits on 1, 2, 3 and 4 devices placed by `place`, with momentum, weight
// decay and clipping.
void ExpectReproducibleOnOneToFourDevices(
    const std::function<std::vector<nn::Device>(int)>& place) {
  LeNetUpdate update = PlainSgd(0.1f);
  update.optimizer.momentum = 0.9f;
  update.optimizer.weight_decay = 1e-3f;
  update.clip_grad_norm = 1.0;
  const nn::LeNetParams init =
      nn::LeNetParams::Init(5, nn::InitScheme::kKaimingNormal);
  std::vector<float> want;
  for (int k = 1; k <= 4; ++k) {
    LeNetReplicas replicas(init, place(k), parallel::ReplicaGroupOptions(),
                           update,
                           /*micro_shards=*/4);
    EXPECT_EQ(replicas.engine().shards_per_batch(), 4);
    for (int step = 0; step < 3; ++step) {
      const Batch b = RandomBatch(step == 2 ? 3 : 29, 40 + step);
      replicas.TrainStep(Shards(b, 4));
    }
    EXPECT_EQ(replicas.CompareReplicas(), "") << k;
    std::vector<float> got;
    for (const nn::Tensor* t : replicas.State().tensors) {
      got.insert(got.end(), t->data(), t->data() + t->numel());
    }
    if (k == 1) want = got;
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0)
        << k << " devices";
  }
}

TEST(LeNetReplicasTest, ReproducibleStepsAreTheSameBitsOnOneToFourDevices) {
  ExpectReproducibleOnOneToFourDevices(Cpus);
}

// The same with 1-4 replicas on one GPU (deterministic convolution
// algorithms; the sums through host memory). Skips without a GPU.
TEST(LeNetReplicasTest, ReproducibleStepsOnOneGpuAreTheSameBits) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
  const nn::Device gpu = nn::Device::Cuda(report.usable[0]);
  const auto algorithms2 = nn::ScopedCompute(
      &nn::ComputeOptions::conv_algorithms, nn::ConvAlgorithms::kDeterministic);
  ExpectReproducibleOnOneToFourDevices(
      [gpu](int k) { return std::vector<nn::Device>(k, gpu); });
}

// The training loop's order on a GPU: step t + 1 queued before step t is
// finished. Queued steps are the synchronous ones bit for bit
// (deterministic algorithms), and one replica queues a step, update and
// gradient check included, without the host waiting for the GPU.
TEST(LeNetReplicasTest, QueuedStepsOnOneGpuAreTheSynchronousSteps) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
  const nn::Device gpu = nn::Device::Cuda(report.usable[0]);
  const auto algorithms3 = nn::ScopedCompute(
      &nn::ComputeOptions::conv_algorithms, nn::ConvAlgorithms::kDeterministic);
  const nn::LeNetParams init =
      nn::LeNetParams::Init(6, nn::InitScheme::kKaimingNormal);
  for (int k : {1, 2}) {
    const std::vector<nn::Device> devices(k, gpu);
    LeNetReplicas sync(init, devices, parallel::ReplicaGroupOptions(),
                       PlainSgd(0.1f));
    LeNetReplicas queued(init, devices, parallel::ReplicaGroupOptions(),
                         PlainSgd(0.1f));
    // The first step chooses the algorithms and fills the memory pools.
    sync.TrainStep(Shards(RandomBatch(16, 20), k));
    queued.TrainStep(Shards(RandomBatch(16, 20), k));
    std::vector<parallel::TrainStepStats> want;
    for (int step = 0; step < 3; ++step) {
      want.push_back(sync.TrainStep(Shards(RandomBatch(16, 21 + step), k)));
    }
    const uint64_t before = nn::HostWaitsForGpus();
    parallel::PendingStep a = queued.QueueStep(Shards(RandomBatch(16, 21), k));
    parallel::PendingStep b = queued.QueueStep(Shards(RandomBatch(16, 22), k));
    if (k == 1) {
      EXPECT_EQ(nn::HostWaitsForGpus() - before, 0u)
          << "the host waited while queuing two steps";
    }
    const std::string what = std::to_string(k) + " replicas";
    EXPECT_EQ(a.Finish().loss_sum, want[0].loss_sum) << what;
    parallel::PendingStep c = queued.QueueStep(Shards(RandomBatch(16, 23), k));
    EXPECT_EQ(b.Finish().loss_sum, want[1].loss_sum) << what;
    EXPECT_EQ(c.Finish().loss_sum, want[2].loss_sum) << what;
    const parallel::NamedTensors got = queued.State(), expected = sync.State();
    for (size_t t = 0; t < got.tensors.size(); ++t) {
      const nn::Tensor& x = *got.tensors[t];
      const nn::Tensor& y = *expected.tensors[t];
      EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.numel() * sizeof(float)))
          << what << ": " << got.names[t];
    }
  }
}

// The gradient of `b`'s mean loss at `params`, on one CPU device: the
// references' step.
nn::LeNetParams MeanGradient(const nn::LeNetParams& params, const Batch& b) {
  nn::Tensor x = nn::Tensor::Uninitialized({b.size(), 1, 28, 28});
  std::memcpy(x.data(), b.images.data(), b.images.size() * sizeof(float));
  nn::LeNetActivations acts;
  const nn::LossResult loss =
      nn::SoftmaxCrossEntropy(nn::LeNetForward(params, x, &acts),
                              b.labels.data(), nn::Reduction::kMean);
  return nn::LeNetBackward(params, acts, loss.dlogits);
}

// Momentum, weight decay and clipping: k replicas on place(k) still take
// one device's steps, and the steps are torch's SGD on the batch-mean
// gradient.
void ExpectUpdatesMatchTheReference(
    const std::function<std::vector<nn::Device>(int)>& place,
    const std::string& backend, double rel_tol) {
  LeNetUpdate update = PlainSgd(0.1f);
  update.optimizer.momentum = 0.9f;
  update.optimizer.weight_decay = 0.01f;
  update.clip_grad_norm = 0.5;
  const std::vector<Batch> batches = {RandomBatch(64, 1), RandomBatch(61, 2),
                                      RandomBatch(32, 3)};
  const nn::LeNetParams init =
      nn::LeNetParams::Init(7, nn::InitScheme::kKaimingNormal);
  // The reference: the batch-mean gradient, clipped, through nn::SgdUpdate.
  nn::LeNetParams reference = init.Clone();
  nn::LeNetParams velocity = nn::LeNetParams::Zeros();
  int clipped = 0;
  for (const Batch& b : batches) {
    nn::LeNetParams grads = MeanGradient(reference, b);
    std::vector<nn::Tensor*> g = grads.All();
    clipped += nn::ClipGradNorm(g, update.clip_grad_norm) > 0.5;
    const std::vector<nn::Tensor*> p = reference.All(), v = velocity.All();
    for (size_t t = 0; t < p.size(); ++t) {
      nn::SgdUpdate(*p[t], *g[t], v[t],
                    {update.optimizer.lr, update.optimizer.momentum,
                     update.optimizer.weight_decay});
    }
  }
  EXPECT_GT(clipped, 0) << "the test should exercise clipping";
  parallel::ReplicaGroupOptions options;
  options.backend = backend;
  for (int k : {1, 3}) {
    LeNetReplicas replicas(init, place(k), options, update);
    for (const Batch& b : batches) replicas.TrainStep(Shards(b, k));
    const std::string what = "momentum on " + std::to_string(k);
    // The state holds the parameters (host copies), then the velocities.
    const parallel::NamedTensors state = replicas.State();
    ASSERT_EQ(state.names.size(), 2 * init.All().size());
    EXPECT_EQ(state.names.back(), "b4.momentum");
    const std::vector<const nn::Tensor*> params(
        state.tensors.begin(), state.tensors.begin() + init.All().size());
    const nn::LeNetParams& want = reference;
    ExpectNear(params, want.All(), rel_tol, what);
    EXPECT_EQ(replicas.CompareReplicas(), "") << what;
  }
}

TEST(LeNetReplicasTest, MomentumDecayAndClippingMatchTheReference) {
  ExpectUpdatesMatchTheReference(Cpus, "ring", 2e-6);
}

// The same on one GPU (clipping's norm and scale as device ops).
TEST(LeNetReplicasTest, MomentumDecayAndClippingOnOneGpu) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
  const nn::Device gpu = nn::Device::Cuda(report.usable[0]);
  ExpectUpdatesMatchTheReference(
      [gpu](int k) { return std::vector<nn::Device>(k, gpu); }, "ring", 1e-4);
}

// AdamW: k replicas on place(k) take torch's AdamW steps on the batch-mean
// gradient, and the state a checkpoint saves holds both moments and t.
void ExpectAdamWMatchesTheReference(
    const std::function<std::vector<nn::Device>(int)>& place, double rel_tol) {
  LeNetUpdate update;
  update.optimizer.name = "adamw";
  update.optimizer.lr = 0.01f;
  update.optimizer.weight_decay = 0.05f;
  const std::vector<Batch> batches = {RandomBatch(64, 1), RandomBatch(61, 2),
                                      RandomBatch(32, 3)};
  const nn::LeNetParams init =
      nn::LeNetParams::Init(7, nn::InitScheme::kKaimingNormal);
  nn::LeNetParams reference = init.Clone();
  nn::LeNetParams m = nn::LeNetParams::Zeros(), v = nn::LeNetParams::Zeros();
  nn::AdamOptions adamw;
  adamw.lr = 0.01f;
  adamw.weight_decay = 0.05f;
  adamw.decoupled = true;
  int64_t step = 0;
  for (const Batch& b : batches) {
    nn::LeNetParams grads = MeanGradient(reference, b);
    const std::vector<nn::Tensor*> g = grads.All();
    nn::AdamUpdateAll(reference.All(),
                      std::vector<const nn::Tensor*>(g.begin(), g.end()),
                      m.All(), v.All(), adamw, ++step);
  }
  for (int k : {1, 3}) {
    LeNetReplicas replicas(init, place(k), parallel::ReplicaGroupOptions(),
                           update);
    for (const Batch& b : batches) replicas.TrainStep(Shards(b, k));
    const std::string what = "adamw on " + std::to_string(k);
    const parallel::NamedTensors state = replicas.State();
    const size_t n = init.All().size();
    ASSERT_EQ(state.names.size(), 3 * n + 1) << what;
    EXPECT_EQ(state.names[n], "W1.exp_avg");
    EXPECT_EQ(state.names[2 * n], "W1.exp_avg_sq");
    EXPECT_EQ(state.names.back(), "adamw.step");
    EXPECT_EQ(state.tensors.back()->data()[0], 3.0f);
    const std::vector<const nn::Tensor*> params(state.tensors.begin(),
                                                state.tensors.begin() + n);
    const std::vector<nn::Tensor*> want = reference.All();
    ExpectNear(params, std::vector<const nn::Tensor*>(want.begin(), want.end()),
               rel_tol, what);
    EXPECT_EQ(replicas.CompareReplicas(), "") << what;
  }
}

TEST(LeNetReplicasTest, AdamWMatchesTheReference) {
  ExpectAdamWMatchesTheReference(Cpus, 2e-5);
}

TEST(LeNetReplicasTest, AdamWOnOneGpu) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
  const nn::Device gpu = nn::Device::Cuda(report.usable[0]);
  ExpectAdamWMatchesTheReference(
      [gpu](int k) { return std::vector<nn::Device>(k, gpu); }, 1e-4);
}

// Gradient accumulation: micro-batches of b and c samples take the step of
// one batch of b + c, on 1 and 2 devices (summing each micro-batch across
// devices would count the first twice).
TEST(LeNetReplicasTest, AccumulatedMicroBatchesTakeTheWholeBatchStep) {
  const Batch a = RandomBatch(32, 1), b = RandomBatch(29, 2);
  Batch whole;
  whole.images = a.images;
  whole.images.insert(whole.images.end(), b.images.begin(), b.images.end());
  whole.labels = a.labels;
  whole.labels.insert(whole.labels.end(), b.labels.begin(), b.labels.end());
  const nn::LeNetParams init =
      nn::LeNetParams::Init(7, nn::InitScheme::kKaimingNormal);
  for (const char* optimizer : {"sgd", "adamw"}) {
    LeNetUpdate update = PlainSgd(0.5f);
    update.optimizer.name = optimizer;
    if (std::string(optimizer) == "adamw") update.optimizer.lr = 0.01f;
    for (int k : {1, 2}) {
      LeNetReplicas accumulated(init, Cpus(k), parallel::ReplicaGroupOptions(),
                                update);
      LeNetReplicas reference(init, Cpus(k), parallel::ReplicaGroupOptions(),
                              update);
      const std::string what =
          std::string(optimizer) + " on " + std::to_string(k);
      for (int step = 0; step < 2; ++step) {
        const parallel::TrainStepStats acc =
            accumulated.QueueAccumulatedStep({Shards(a, k), Shards(b, k)})
                .Finish();
        const parallel::TrainStepStats ref =
            reference.TrainStep(Shards(whole, k));
        EXPECT_EQ(acc.samples, 61) << what;
        EXPECT_NEAR(acc.loss_sum, ref.loss_sum, 1e-4 * ref.loss_sum) << what;
      }
      ExpectNear(accumulated.params(0).All(), reference.params(0).All(), 1e-5,
                 what);
    }
  }
}

TEST(LeNetReplicasTest, SetLearningRateChangesTheStep) {
  const Batch batch = RandomBatch(16, 5);
  const nn::LeNetParams init = nn::LeNetParams::Init(2);
  LeNetReplicas a(init, Cpus(1), parallel::ReplicaGroupOptions(),
                  PlainSgd(0.1f));
  LeNetReplicas b(init, Cpus(1), parallel::ReplicaGroupOptions(),
                  PlainSgd(0.4f));
  a.SetLearningRate(0.4);
  a.TrainStep(Shards(batch, 1));
  b.TrainStep(Shards(batch, 1));
  ExpectIdentical(a.params(0), b.params(0), "lr set to 0.4");
}

// --grad_dtype=bf16: the summed gradients cross the wire in bfloat16, so
// the step differs from float32's, by about bfloat16's rounding (2^-8 of
// the gradients, a few roundings deep), and the replicas still agree.
void ExpectBf16OnTheWireWithinItsRounding(
    const std::vector<nn::Device>& devices) {
  const Batch batch = RandomBatch(16, 7);
  const nn::LeNetParams init = nn::LeNetParams::Init(5);
  LeNetUpdate bf16 = PlainSgd(0.2f);
  bf16.grad_dtype = collectives::DataType::kBFloat16;
  LeNetReplicas wide(init, devices, parallel::ReplicaGroupOptions(),
                     PlainSgd(0.2f));
  LeNetReplicas narrow(init, devices, parallel::ReplicaGroupOptions(), bf16);
  wide.TrainStep(Shards(batch, 2));
  narrow.TrainStep(Shards(batch, 2));
  const nn::LeNetParams n0 = narrow.params(0).To(nn::Device::Cpu());
  ExpectIdentical(narrow.params(1).To(nn::Device::Cpu()), n0, "bf16 replicas");
  const nn::LeNetParams w0 = wide.params(0).To(nn::Device::Cpu());
  const std::vector<const nn::Tensor*> w = w0.All(), n = n0.All(),
                                       p0 = init.All();
  double moved = 0, apart = 0;
  for (size_t t = 0; t < w.size(); ++t) {
    for (int64_t i = 0; i < w[t]->numel(); ++i) {
      const double step = double(w[t]->data()[i]) - p0[t]->data()[i];
      const double off = double(n[t]->data()[i]) - w[t]->data()[i];
      moved += step * step;
      apart += off * off;
    }
  }
  EXPECT_GT(apart, 0) << "bfloat16 on the wire changed nothing";
  EXPECT_LE(std::sqrt(apart), 3 * std::ldexp(1.0, -8) * std::sqrt(moved));
}

TEST(LeNetReplicasTest, Bf16OnTheWireStaysWithinItsRounding) {
  ExpectBf16OnTheWireWithinItsRounding(Cpus(2));
}

// The same with two replicas on one GPU: the casts are kernels there.
TEST(LeNetReplicasTest, Bf16OnTheWireOnOneGpuStaysWithinItsRounding) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
  const nn::Device gpu = nn::Device::Cuda(report.usable[0]);
  ExpectBf16OnTheWireWithinItsRounding({gpu, gpu});
}

TEST(LeNetReplicasTest, RefusesABadUpdate) {
  LeNetUpdate update = PlainSgd(0.1f);
  update.optimizer.momentum = 1.5f;
  EXPECT_THROW(LeNetReplicas(nn::LeNetParams::Init(1), Cpus(1),
                             parallel::ReplicaGroupOptions(), update),
               std::invalid_argument);
  LeNetUpdate wire = PlainSgd(0.1f);
  wire.grad_dtype = collectives::DataType::kInt32;
  EXPECT_THROW(LeNetReplicas(nn::LeNetParams::Init(1), Cpus(2),
                             parallel::ReplicaGroupOptions(), wire),
               std::invalid_argument);
}

TEST(LeNetReplicasTest, ReplicasStayBitwiseIdenticalAndRunsRepeat) {
  const nn::LeNetParams init = nn::LeNetParams::Init(3);
  parallel::ReplicaGroupOptions options;
  LeNetReplicas a(init, Cpus(3), options, PlainSgd(0.2f)),
      b(init, Cpus(3), options, PlainSgd(0.2f));
  for (int step = 0; step < 40; ++step) {
    const Batch batch = RandomBatch(1 + step % 9, 100 + step);
    a.TrainStep(Shards(batch, 3));
    b.TrainStep(Shards(batch, 3));
  }
  for (int d = 0; d < 3; ++d) {
    ExpectIdentical(a.params(d), a.params(0), "replica " + std::to_string(d));
    ExpectIdentical(b.params(d), a.params(0), "second run");
  }
  // And training moved the parameters.
  EXPECT_NE(std::memcmp(a.params(0).W1.data(), init.W1.data(),
                        init.W1.numel() * sizeof(float)),
            0);
}

// A non-finite gradient skips the step on every device, keeping the last
// finite values, whether the gradients went through the allreduce (two
// devices) or not (one device: alone in the job, nothing to sum).
TEST(LeNetReplicasTest, ANonFiniteStepIsSkippedOnOneDeviceAndOnTwo) {
  nn::LeNetParams init = nn::LeNetParams::Init(4);
  init.b4.data()[3] = std::nanf("");
  for (int k : {1, 2}) {
    LeNetReplicas replicas(init, Cpus(k), parallel::ReplicaGroupOptions(),
                           PlainSgd(0.2f));
    const parallel::TrainStepStats stats =
        replicas.TrainStep(Shards(RandomBatch(8, 5), k));
    EXPECT_NE(stats.divergence, "") << k << " devices";
    for (int d = 0; d < k; ++d) {
      ExpectIdentical(
          replicas.params(d), init,
          std::to_string(k) + " devices, replica " + std::to_string(d));
    }
  }
}

TEST(LeNetReplicasTest, EvaluationCountsEveryShard) {
  const nn::LeNetParams init =
      nn::LeNetParams::Init(5, nn::InitScheme::kKaimingNormal);
  const Batch b = RandomBatch(11, 9);
  parallel::ReplicaGroupOptions options;
  LeNetReplicas one(init, Cpus(1), options, PlainSgd(0.1f));
  LeNetReplicas three(init, Cpus(3), options, PlainSgd(0.1f));
  const int64_t correct = one.CountCorrect(Shards(b, 1));
  EXPECT_EQ(three.CountCorrect(Shards(b, 3)), correct);
}

TEST(LeNetReplicasTest, BadLabelFailsEveryDeviceWithTheCause) {
  parallel::ReplicaGroupOptions options;
  options.comm.timeout = std::chrono::milliseconds(20000);
  LeNetReplicas replicas(nn::LeNetParams::Init(1), Cpus(2), options,
                         PlainSgd(0.1f));
  Batch b = RandomBatch(8, 4);
  b.labels[7] = -1;
  const auto start = std::chrono::steady_clock::now();
  try {
    replicas.TrainStep(Shards(b, 2));
    FAIL() << "expected an error";
  } catch (const nn::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("label -1"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace ringlet::trainers
