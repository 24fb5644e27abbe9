// DataParallel with replicas on GPUs. One GPU is enough for every case:
// several replicas share it (each with its own buffers and, through the
// ring and naive backends, its own communication stream). Every case skips,
// with the runtime's reason, where there is no GPU.
//
// RINGLET_GPU_TEST_ON_CPU=1 (data_parallel_cuda_harness_test) runs the same
// cases on CPU devices instead, so the checks and their tolerances are
// exercised in every build.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/api/collective_error.h"
#include "gpu/device_probe.h"
#include "nn/compute_options.h"
#include "nn/gpu_precision.h"
#include "nn/out_of_memory.h"
#include "parallel/data_parallel.h"
#include "parallel/testing/batches.h"

namespace ringlet::parallel {
namespace {

using testing::Batch;
using testing::Cpus;
using ::testing::HasSubstr;
using testing::RandomBatch;
using testing::Seeded;
using testing::Shards;
using testing::SmallNet;

// Without batch norm, k replicas' step equals one replica's up to float
// rounding whatever the shards (batch norm without sync_bn uses each
// shard's statistics).
std::unique_ptr<nn::Sequential> NetWithoutBatchNorm() {
  auto net = std::make_unique<nn::Sequential>();
  net->Add(std::make_unique<nn::Conv2d>(1, 4, 3, 1, 1));
  net->Add(std::make_unique<nn::ReLU>());
  net->Add(std::make_unique<nn::Conv2d>(4, 8, 3, 2, 1));
  net->Add(std::make_unique<nn::ReLU>());
  net->Add(std::make_unique<nn::GlobalAvgPool>());
  net->Add(std::make_unique<nn::Flatten>());
  net->Add(std::make_unique<nn::Linear>(8, 10));
  return net;
}

class OnOneGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* on_cpu = std::getenv("RINGLET_GPU_TEST_ON_CPU");
    if (on_cpu != nullptr && std::string(on_cpu) == "1") {
      on_cpu_ = true;
      return;
    }
    const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
    if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
    gpu_ = nn::Device::Cuda(report.usable[0]);
  }
  // k replicas on the GPU (the harness: k CPU devices).
  std::vector<nn::Device> Replicas(int k) const {
    return on_cpu_ ? Cpus(k) : std::vector<nn::Device>(k, gpu_);
  }
  static DataParallelOptions Options(const std::string& backend) {
    DataParallelOptions options;
    options.backend = backend;
    options.optimizer.lr = 0.1f;
    options.optimizer.momentum = 0.9f;
    options.bucket_bytes = 256;  // Several buckets even for a tiny model.
    return options;
  }
  nn::Device gpu_;
  bool on_cpu_ = false;
};

// max |a - b| <= tol * max |b| per tensor, with a floor for tensors whose
// true value is about zero: tol times the largest magnitude in the whole
// state. (A convolution's bias before a batch norm has a zero gradient in
// exact arithmetic, so its update and momentum are rounding noise of the
// whole gradient's size: with Eigen's convolutions 4 replicas put
// 0.bias.momentum 1.4e-7 from one replica's, past the fixed 1e-7 floor
// this had. A real fault moves weights by a share of the gradient, far
// beyond either: the k replicas below without sync BN fail 384 checks.)
void ExpectStatesNear(const NamedTensors& got, const NamedTensors& want,
                      double tol, const std::string& what) {
  ASSERT_EQ(got.tensors.size(), want.tensors.size());
  double state_scale = 0;
  for (const nn::Tensor* b : want.tensors) {
    for (int64_t i = 0; i < b->numel(); ++i) {
      state_scale = std::max(state_scale, std::fabs(double(b->data()[i])));
    }
  }
  for (size_t t = 0; t < want.tensors.size(); ++t) {
    const nn::Tensor& a = *got.tensors[t];
    const nn::Tensor& b = *want.tensors[t];
    ASSERT_EQ(a.numel(), b.numel());
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < b.numel(); ++i) {
      diff = std::max(diff, std::fabs(double(a.data()[i]) - b.data()[i]));
      scale = std::max(scale, std::fabs(double(b.data()[i])));
    }
    EXPECT_LE(diff, tol * std::max(scale, state_scale) + 1e-9)
        << what << ": " << want.names[t];
  }
}

// The central test: 1..4 replicas on one GPU (uneven shards, and an
// empty one: 3 samples over 4 replicas) take one replica's steps.
TEST_F(OnOneGpu, KReplicasTakeTheOneReplicaStep) {
  for (const std::string backend : {"ring", "naive"}) {
    for (int64_t batch : {3, 10}) {
      const std::vector<Batch> batches = {RandomBatch(batch, 8, 1),
                                          RandomBatch(batch, 8, 2)};
      const auto factory = Seeded(NetWithoutBatchNorm, 3);
      DataParallel one(factory, Replicas(1), Options(backend));
      for (const Batch& b : batches) one.TrainStep(Shards(b, 1));
      const NamedTensors want = one.State(0);
      for (int k = 2; k <= 4; ++k) {
        DataParallel dp(factory, Replicas(k), Options(backend));
        for (const Batch& b : batches) dp.TrainStep(Shards(b, k));
        const std::string what = backend + ", " + std::to_string(k) +
                                 " replicas, batch " + std::to_string(batch);
        EXPECT_EQ(dp.CompareReplicas(), "") << what;
        ExpectStatesNear(dp.State(0), want, 1e-5, what);
      }
    }
  }
}

// The largest |a - b| over the state relative to its largest value.
double RelativeStateDifference(const NamedTensors& got,
                               const NamedTensors& want) {
  double diff = 0, scale = 0;
  for (size_t t = 0; t < want.tensors.size(); ++t) {
    const nn::Tensor& a = *got.tensors[t];
    const nn::Tensor& b = *want.tensors[t];
    for (int64_t i = 0; i < b.numel(); ++i) {
      diff = std::max(diff, std::fabs(double(a.data()[i]) - b.data()[i]));
      scale = std::max(scale, std::fabs(double(b.data()[i])));
    }
  }
  return diff / scale;
}

// --grad_dtype=bf16: each bucket cast to bfloat16 on the replica's stream,
// summed so, cast back. k replicas take one float32 replica's steps within
// bfloat16's rounding of the gradients: the states stay within 3e-3 of the
// largest value (CPU devices: 4.6e-4 for 2 replicas, 7.4e-4 for 4; sums
// that never came back: 0.15), they differ from float32 on the wire (the
// rounding happened), and every replica holds the same state.
TEST_F(OnOneGpu, Bf16OnTheWireKReplicasTakeTheOneReplicaStep) {
  const std::vector<Batch> batches = {RandomBatch(10, 8, 1),
                                      RandomBatch(10, 8, 2)};
  const auto factory = Seeded(NetWithoutBatchNorm, 3);
  DataParallel one(factory, Replicas(1), Options("ring"));
  for (const Batch& b : batches) one.TrainStep(Shards(b, 1));
  const NamedTensors want = one.State(0);
  for (int k : {2, 4}) {
    DataParallelOptions fp32 = Options("ring");
    DataParallelOptions bf16 = fp32;
    bf16.grad_dtype = collectives::DataType::kBFloat16;
    DataParallel dp32(factory, Replicas(k), fp32);
    DataParallel dp16(factory, Replicas(k), bf16);
    for (const Batch& b : batches) {
      dp32.TrainStep(Shards(b, k));
      dp16.TrainStep(Shards(b, k));
    }
    const std::string what = std::to_string(k) + " replicas";
    EXPECT_EQ(dp16.CompareReplicas(), "") << what;
    const double off16 = RelativeStateDifference(dp16.State(0), want);
    const double off32 = RelativeStateDifference(dp32.State(0), want);
    std::printf(
        "%s: state off one replica's by %.3g (bf16 wire), %.3g (fp32)\n",
        what.c_str(), off16, off32);
    EXPECT_LE(off16, 3e-3) << what;
    EXPECT_GT(off16, off32) << what << ": bfloat16 on the wire changed nothing";
  }
}

// With synchronised batch norm every replica normalises with the whole
// batch's statistics (sums allreduced in device memory), so k replicas of
// a network with batch norm take one replica's step, uneven and empty
// shards included.
TEST_F(OnOneGpu, SyncBnKReplicasTakeTheOneReplicaStep) {
  for (const std::string backend : {"ring", "naive"}) {
    for (int64_t batch : {3, 10}) {
      const std::vector<Batch> batches = {RandomBatch(batch, 8, 30),
                                          RandomBatch(batch, 8, 31)};
      DataParallelOptions options = Options(backend);
      options.sync_bn = true;
      const auto factory = Seeded(SmallNet, 8);
      DataParallel one(factory, Replicas(1), options);
      for (const Batch& b : batches) one.TrainStep(Shards(b, 1));
      const NamedTensors want = one.State(0);
      for (int k = 2; k <= 4; ++k) {
        DataParallel dp(factory, Replicas(k), options);
        for (const Batch& b : batches) dp.TrainStep(Shards(b, k));
        const std::string what = backend + ", sync_bn, " + std::to_string(k) +
                                 " replicas, batch " + std::to_string(batch);
        EXPECT_EQ(dp.CompareReplicas(), "") << what;
        ExpectStatesNear(dp.State(0), want, 1e-5, what);
      }
    }
  }
}

// Gradient clipping (the global norm and the scaling as device ops): k
// replicas take the one-replica step. The bound is small enough that every
// step clips.
TEST_F(OnOneGpu, ClippedStepsOfKReplicasTakeTheOneReplicaStep) {
  DataParallelOptions options = Options("ring");
  options.clip_grad_norm = 1e-3;
  const std::vector<Batch> batches = {RandomBatch(10, 8, 40),
                                      RandomBatch(7, 8, 41)};
  const auto factory = Seeded(NetWithoutBatchNorm, 9);
  DataParallel one(factory, Replicas(1), options);
  for (const Batch& b : batches) one.TrainStep(Shards(b, 1));
  const NamedTensors want = one.State(0);
  // Without clipping the step differs: the bound does bite.
  DataParallelOptions unclipped = Options("ring");
  DataParallel free(factory, Replicas(1), unclipped);
  for (const Batch& b : batches) free.TrainStep(Shards(b, 1));
  EXPECT_NE(free.State(0).tensors[0]->data()[0], want.tensors[0]->data()[0]);
  for (int k = 2; k <= 3; ++k) {
    DataParallel dp(factory, Replicas(k), options);
    for (const Batch& b : batches) dp.TrainStep(Shards(b, k));
    EXPECT_EQ(dp.CompareReplicas(), "") << k << " replicas";
    ExpectStatesNear(dp.State(0), want, 1e-5,
                     "clipped, " + std::to_string(k) + " replicas");
  }
}

// NCCL orders the buckets' allreduces by events (no host wait per
// bucket): one replica per GPU takes the ring's steps within float
// rounding (the two sum in other orders), over several buckets and steps.
// Needs 2 GPUs: one replica is alone in the job and sums nothing, and NCCL
// refuses two ranks on one GPU (NcclAsync in //collectives:cuda_test
// covers the queued calls on one GPU).
TEST_F(OnOneGpu, OneReplicaPerGpuThroughNcclTakesTheRingSteps) {
  if (on_cpu_) GTEST_SKIP() << "nccl needs GPUs";
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.size() < 2) {
    GTEST_SKIP() << "needs 2 GPUs; the CUDA runtime reports "
                 << report.usable.size();
  }
  std::vector<nn::Device> gpus;
  for (int g : report.usable) gpus.push_back(nn::Device::Cuda(g));
  const int k = static_cast<int>(gpus.size());
  const auto factory = Seeded(SmallNet, 12);
  DataParallel ring(factory, gpus, Options("ring"));
  DataParallel nccl(factory, gpus, Options("nccl"));
  EXPECT_GT(nccl.num_buckets(), 1);
  for (int step = 0; step < 3; ++step) {
    const Batch b = RandomBatch(4 * k + 1, 8, 50 + step);
    const TrainStepStats a = ring.TrainStep(Shards(b, k));
    const TrainStepStats c = nccl.TrainStep(Shards(b, k));
    EXPECT_NEAR(c.loss_sum, a.loss_sum, 1e-5 * std::fabs(a.loss_sum))
        << "step " << step;
  }
  EXPECT_EQ(nccl.CompareReplicas(), "");
  ExpectStatesNear(nccl.State(0), ring.State(0), 1e-5, "nccl vs ring");
}

TEST_F(OnOneGpu, ReplicasStayBitwiseIdenticalOverTenSteps) {
  DataParallel dp(Seeded(SmallNet, 4), Replicas(2), Options("ring"));
  EXPECT_EQ(dp.num_buckets() > 1, true);
  for (int step = 0; step < 10; ++step) {
    const TrainStepStats stats =
        dp.TrainStep(Shards(RandomBatch(9, 8, 10 + step), 2));
    EXPECT_EQ(stats.samples, 9);
    EXPECT_TRUE(std::isfinite(stats.loss_sum));
    EXPECT_EQ(stats.divergence, "");
  }
  EXPECT_EQ(dp.CompareReplicas(), "");
}

// The same steps on 2 CPU devices and on 2 replicas of one GPU: cuDNN's
// algorithms sum in another order, so equal within float tolerance.
TEST_F(OnOneGpu, StepsMatchTheCpuDevices) {
  const auto factory = Seeded(SmallNet, 5);
  DataParallel cpu(factory, Cpus(2), Options("ring"));
  DataParallel gpu(factory, Replicas(2), Options("ring"));
  for (int step = 0; step < 3; ++step) {
    const Batch b = RandomBatch(16, 8, 20 + step);
    const TrainStepStats on_cpu = cpu.TrainStep(Shards(b, 2));
    const TrainStepStats on_gpu = gpu.TrainStep(Shards(b, 2));
    EXPECT_NEAR(on_gpu.loss_sum, on_cpu.loss_sum,
                1e-4 * std::fabs(on_cpu.loss_sum))
        << "step " << step;
    EXPECT_EQ(on_gpu.correct, on_cpu.correct) << "step " << step;
  }
  ExpectStatesNear(gpu.State(0), cpu.State(0), 1e-3, "gpu vs cpu");
  EXPECT_EQ(gpu.CountCorrect(Shards(RandomBatch(12, 8, 99), 2)),
            cpu.CountCorrect(Shards(RandomBatch(12, 8, 99), 2)));
}

// The losses computed on the host (label smoothing, mean squared error,
// binary cross-entropy with logits: the replica's output read back, its
// gradient written to the device): 2 replicas on the GPU take the CPU
// devices' steps, and Evaluate's loss agrees.
TEST_F(OnOneGpu, HostLossesOnReplicasMatchTheCpuDevices) {
  const Batch b = RandomBatch(12, 8, 61);
  std::vector<float> targets(b.size() * 10);
  for (size_t i = 0; i < targets.size(); ++i) targets[i] = (i * 3 % 10) < 2;
  const data::Shard whole{b.size(), Shards(b, 1)[0].inputs,
                          data::SamplesOf(targets.data(), {10})};
  for (const auto& [name, loss, float_targets] :
       std::vector<std::tuple<std::string, LossFunction, bool>>{
           {"label smoothing", SoftmaxCrossEntropyLoss(0.1f), false},
           {"mse", MeanSquaredErrorLoss(), true},
           {"bce", BinaryCrossEntropyWithLogitsLoss(), true}}) {
    DataParallelOptions options = Options("ring");
    options.loss = loss;
    const auto factory = Seeded(SmallNet, 7);
    DataParallel cpu(factory, Cpus(2), options);
    DataParallel gpu(factory, Replicas(2), options);
    const std::vector<data::Shard> shards =
        float_targets ? data::ShardBatch(whole, 2) : Shards(b, 2);
    for (int step = 0; step < 2; ++step) {
      const double want = cpu.TrainStep(shards).loss_sum;
      EXPECT_NEAR(gpu.TrainStep(shards).loss_sum, want, 1e-4 * want) << name;
    }
    ExpectStatesNear(gpu.State(0), cpu.State(0), 1e-3, name);
    const double eval = cpu.Evaluate(shards).loss_sum;
    EXPECT_NEAR(gpu.Evaluate(shards).loss_sum, eval, 1e-4 * eval) << name;
  }
}

// Reproducible steps (micro_shards): 1, 2 and 4 replicas on one GPU give
// the same parameters, buffers and loss, bit for bit (each micro-shard
// computed alike wherever it runs, with deterministic convolution
// algorithms; the sums on the host). Against CPU devices the arithmetic
// differs (cuDNN's and cuBLAS's kernels against oneDNN's and Eigen's), so
// there only within a tolerance.
TEST_F(OnOneGpu, ReproducibleStepsAreTheSameBitsOnOneTwoAndFourReplicas) {
  const auto algorithms2 = nn::ScopedCompute(
      &nn::ComputeOptions::conv_algorithms, nn::ConvAlgorithms::kDeterministic);
  DataParallelOptions options = Options("ring");
  options.micro_shards = 4;
  options.optimizer.weight_decay = 1e-3f;
  const auto train = [&](const std::vector<nn::Device>& devices,
                         std::vector<double>* losses) {
    auto dp =
        std::make_unique<DataParallel>(Seeded(SmallNet, 3), devices, options);
    for (int step = 0; step < 3; ++step) {
      // 13 samples: micro-shards of 4, 3, 3, 3; then 3 (one empty).
      const Batch b = RandomBatch(step == 2 ? 3 : 13, 8, 60 + step);
      losses->push_back(dp->TrainStep(Shards(b, 4)).loss_sum);
    }
    EXPECT_EQ(dp->CompareReplicas(), "");
    return dp;
  };
  std::vector<double> one_losses;
  auto one = train(Replicas(1), &one_losses);
  const NamedTensors want = one->State(0);
  for (int k : {2, 4}) {
    std::vector<double> losses;
    auto dp = train(Replicas(k), &losses);
    const NamedTensors got = dp->State(0);
    ASSERT_EQ(got.tensors.size(), want.tensors.size());
    for (size_t t = 0; t < want.tensors.size(); ++t) {
      EXPECT_EQ(std::memcmp(got.tensors[t]->data(), want.tensors[t]->data(),
                            want.tensors[t]->numel() * sizeof(float)),
                0)
          << k << " replicas: " << want.names[t];
    }
    EXPECT_EQ(losses, one_losses) << k << " replicas";
  }
  std::vector<double> cpu_losses;
  auto cpu = train(Cpus(2), &cpu_losses);
  ExpectStatesNear(one->State(0), cpu->State(0), 1e-3, "gpu vs cpu");
}

// Steps queued ahead (two in flight, as the training loop's next step and
// more) and finished later give the synchronous steps; one replica alone
// queues its steps without the host waiting for the GPU at all. Both runs
// use deterministic algorithms, so they must agree bit for bit.
TEST_F(OnOneGpu, QueuedStepsAreTheSynchronousStepsAndWaitForNothing) {
  const auto algorithms3 = nn::ScopedCompute(
      &nn::ComputeOptions::conv_algorithms, nn::ConvAlgorithms::kDeterministic);
  for (int k : {1, 2}) {
    const auto factory = Seeded(SmallNet, 8);
    DataParallel sync(factory, Replicas(k), Options("ring"));
    DataParallel queued(factory, Replicas(k), Options("ring"));
    // The first step chooses the algorithms and fills the memory pools.
    const Batch first = RandomBatch(12, 8, 30);
    sync.TrainStep(Shards(first, k));
    queued.TrainStep(Shards(first, k));
    std::vector<TrainStepStats> want;
    for (int step = 0; step < 3; ++step) {
      want.push_back(sync.TrainStep(Shards(RandomBatch(12, 8, 31 + step), k)));
    }
    const uint64_t waits_before = nn::HostWaitsForGpus();
    PendingStep a = queued.QueueStep(Shards(RandomBatch(12, 8, 31), k));
    PendingStep b = queued.QueueStep(Shards(RandomBatch(12, 8, 32), k));
    if (k == 1) {
      EXPECT_EQ(nn::HostWaitsForGpus() - waits_before, 0u)
          << "the host waited while queuing two steps of one replica";
    }
    const std::string what = std::to_string(k) + " replicas";
    EXPECT_EQ(a.Finish().loss_sum, want[0].loss_sum) << what;
    PendingStep c = queued.QueueStep(Shards(RandomBatch(12, 8, 33), k));
    EXPECT_EQ(b.Finish().loss_sum, want[1].loss_sum) << what;
    const TrainStepStats last = c.Finish();
    EXPECT_EQ(last.loss_sum, want[2].loss_sum) << what;
    EXPECT_EQ(last.correct, want[2].correct) << what;
    EXPECT_EQ(last.samples, 12) << what;
    ExpectStatesNear(queued.State(0), sync.State(0), 0, what);
  }
}

// A step whose gradients are not finite changes nothing, decided on the
// device (the host did not read them before queuing the update), and its
// statistics say which gradient.
TEST_F(OnOneGpu, ANonFiniteStepIsSkippedOnTheDevice) {
  for (int k : {1, 2}) {
    DataParallel dp(Seeded(SmallNet, 9), Replicas(k), Options("ring"));
    dp.TrainStep(Shards(RandomBatch(8, 8, 40), k));
    std::vector<nn::Tensor> before;
    for (const nn::Tensor* t : dp.State(0).tensors)
      before.push_back(t->Clone());
    Batch bad = RandomBatch(8, 8, 41);
    bad.images.data()[3] = std::nanf("");
    const TrainStepStats stats = dp.QueueStep(Shards(bad, k)).Finish();
    EXPECT_NE(stats.divergence, "") << k << " replicas";
    const NamedTensors after = dp.State(0);
    for (size_t t = 0; t < before.size(); ++t) {
      if (after.names[t].find("running") != std::string::npos) continue;
      for (int64_t i = 0; i < before[t].numel(); ++i) {
        ASSERT_EQ(after.tensors[t]->data()[i], before[t].data()[i])
            << k << " replicas: " << after.names[t] << "[" << i << "]";
      }
    }
  }
}

TEST_F(OnOneGpu, ABadLabelOnOneReplicaEndsEveryReplica) {
  DataParallelOptions options = Options("ring");
  options.comm.timeout = std::chrono::seconds(20);
  DataParallel dp(Seeded(SmallNet, 6), Replicas(2), options);
  Batch b = RandomBatch(8, 8, 7);
  b.labels[5] = 12;  // The second replica's shard.
  const auto start = std::chrono::steady_clock::now();
  try {
    dp.TrainStep(Shards(b, 2));
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("12"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// Memory running out anywhere in a step (each allocation the step makes,
// in turn) ends it with OutOfMemory, the cause, on every replica, and the
// replicas and their communicators go away cleanly. One replica through
// NCCL is what a one-GPU trainer runs: its failure path aborted the NCCL
// communicator twice (a double free the host heap did not survive). Under
// ASan (the CPU harness) a stray write on any of these paths is caught.
TEST_F(OnOneGpu, AnAllocationFailingAnywhereInAStepIsOutOfMemory) {
  struct Case {
    int replicas;
    std::string backend;
    bool sync_bn;
  };
  const std::vector<Case> cases = {{1, on_cpu_ ? "ring" : "nccl", false},
                                   {1, "ring", false},
                                   {2, "ring", false},
                                   {2, "naive", true}};
  const Batch b = RandomBatch(6, 8, 11);
  for (const Case& c : cases) {
    const std::string what = std::to_string(c.replicas) + " replicas, " +
                             c.backend + (c.sync_bn ? ", sync_bn" : "");
    DataParallelOptions options = Options(c.backend);
    options.sync_bn = c.sync_bn;
    options.comm.timeout = std::chrono::seconds(20);
    // A step's allocations, counted on the second step (the first one
    // chooses cuDNN's algorithms).
    int64_t count = 0;
    {
      DataParallel dp(Seeded(SmallNet, 5), Replicas(c.replicas), options);
      dp.TrainStep(Shards(b, c.replicas));
      const int64_t before = nn::AllocationsSoFar();
      dp.TrainStep(Shards(b, c.replicas));
      count = nn::AllocationsSoFar() - before;
    }
    ASSERT_GT(count, 10) << what;
    for (int64_t k = 0; k < count; ++k) {
      DataParallel dp(Seeded(SmallNet, 5), Replicas(c.replicas), options);
      nn::InjectAllocationFailure(k);
      try {
        dp.TrainStep(Shards(b, c.replicas));
        ADD_FAILURE() << what << ": allocation " << k << " of " << count
                      << " failed and the step did not";
      } catch (const nn::OutOfMemory& e) {
        EXPECT_THAT(e.what(), HasSubstr("is out of memory"));
      } catch (const std::exception& e) {
        ADD_FAILURE() << what << ": allocation " << k << " of " << count
                      << " failed, yet the error was not the cause: "
                      << e.what();
      }
      nn::InjectAllocationFailure(-1);
    }
  }
}

TEST_F(OnOneGpu, RefusalsNameTheDevicesAndTheWayOut) {
  if (on_cpu_) GTEST_SKIP() << "what GPUs refuse";
  try {
    DataParallel(Seeded(SmallNet, 1), Replicas(2), Options("nccl"));
    FAIL() << "nccl accepted two replicas on one GPU";
  } catch (const collectives::CollectiveError& e) {
    EXPECT_THAT(e.what(), HasSubstr("both on " + ToString(gpu_)));
  }
  EXPECT_THROW(DataParallel(Seeded(SmallNet, 1), {gpu_, nn::Device::Cpu(0)},
                            Options("ring")),
               nn::DeviceError);
}

// Runs everywhere: without a GPU, asking for one says so.
TEST(DataParallelCuda, AGpuThatDoesNotExistIsNamed) {
  const int gpus = gpu::CountCudaDevices();
  DataParallelOptions options;
  try {
    DataParallel(Seeded(SmallNet, 1), {nn::Device::Cuda(gpus)}, options);
    FAIL() << "expected DeviceError";
  } catch (const nn::DeviceError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("cuda:" + std::to_string(gpus) + " does not exist"));
  }
}

}  // namespace
}  // namespace ringlet::parallel
