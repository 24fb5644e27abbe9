// A captured training step (CUDA graph) against the same steps run eagerly:
// ResNet-18's whole step (batch norm, residual adds, folded biases, SGD with
// momentum and weight decay) replayed must give the eager steps' state bit
// for bit. The GPU cases skip with the reason without a GPU.
#include "nn/experimental/captured_step.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gpu/device_probe.h"
#include "nn/compute_options.h"
#include "nn/gpu_precision.h"
#include "nn/layers/init.h"
#include "nn/models/resnet.h"
#include "nn/ops/loss.h"
#include "nn/optim/sgd.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using ::testing::HasSubstr;
using testing::LargestDifference;
using testing::RandomTensor;

TEST(CapturedStepOnCpu, IsRefusedWithTheWayOut) {
  try {
    CapturedStep graph(Device::Cpu(0), [] {});
    ADD_FAILURE() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs a GPU"));
    EXPECT_THAT(e.what(), HasSubstr("call the step itself"));
  }
}

class CapturedStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
    if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
    gpu_ = Device::Cuda(report.usable[0]);
    // The same algorithm for each shape in both models (chosen once per
    // shape and context), none that adds with atomics.
    ComputeOptions options = CurrentComputeOptions();
    options.conv_algorithms = ConvAlgorithms::kDeterministic;
    scope_ = std::make_unique<ComputeScope>(options);
  }
  void TearDown() override { scope_.reset(); }
  std::unique_ptr<ComputeScope> scope_;

  struct Trainee {
    std::unique_ptr<Sequential> model;
    std::unique_ptr<Sgd> sgd;
  };
  Trainee Make() const {
    Trainee t;
    t.model = MakeResNet18(10, 1);
    InitParameters(*t.model, InitScheme::kKaimingNormal, 5);
    t.model->To(gpu_);
    t.sgd = std::make_unique<Sgd>(t.model->Parameters(),
                                  SgdOptions{0.05f, 0.9f, 1e-4f});
    return t;
  }
  // One training step, queued; nothing is read on the host.
  static void Step(Trainee& t, const Tensor& images,
                   const std::vector<int32_t>& labels) {
    t.sgd->ZeroGrad();
    const PendingLoss loss = StartSoftmaxCrossEntropy(
        t.model->Forward(images), labels.data(), Reduction::kMean);
    t.model->Backward(loss.dlogits());
    t.sgd->Step();
  }
  Device gpu_;
};

TEST_F(CapturedStepTest, ReplaysAreTheEagerStepsBitForBit) {
  constexpr int kSteps = 4;
  const Tensor images = RandomTensor({6, 1, 32, 32}, 7, 0.0f, 1.0f).To(gpu_);
  const std::vector<int32_t> labels = {3, 1, 4, 1, 5, 9};

  Trainee eager = Make();
  for (int i = 0; i < kSteps; ++i) Step(eager, images, labels);

  Trainee replayed = Make();
  Step(replayed, images, labels);  // Eagerly first: algorithms are chosen.
  std::vector<int32_t> host_labels = labels;
  CapturedStep graph(gpu_, [&] { Step(replayed, images, host_labels); });
  // The graph copies the labels it saw at capture, from memory of its own:
  // neither new host values nor other uploads cycling through the pinned
  // buffers of the context reach it.
  host_labels.assign(host_labels.size(), 0);
  // Memory made after the capture is never the graph's: an activation-sized
  // tensor (the graph's scratch comes in such sizes) survives the replays.
  const Tensor kept = RandomTensor({6, 64, 32, 32}, 11).To(gpu_);
  Tensor other({1024}, gpu_);
  std::vector<float> noise(1024, 42.0f);
  for (int i = 1; i < kSteps; ++i) {
    graph.Replay();
    for (int u = 0; u < 9; ++u) CopyFromHostAsync(noise.data(), other);
  }

  const std::vector<Parameter*> want = eager.model->Parameters();
  const std::vector<Parameter*> got = replayed.model->Parameters();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(LargestDifference(got[i]->value, want[i]->value), 0.0)
        << want[i]->name;
  }
  const std::vector<Buffer*> want_buffers = eager.model->Buffers();
  const std::vector<Buffer*> got_buffers = replayed.model->Buffers();
  ASSERT_EQ(got_buffers.size(), want_buffers.size());
  for (size_t i = 0; i < want_buffers.size(); ++i) {
    EXPECT_EQ(LargestDifference(got_buffers[i]->value, want_buffers[i]->value),
              0.0)
        << want_buffers[i]->name;
  }
  for (size_t i = 0; i < eager.sgd->velocity().size(); ++i) {
    EXPECT_EQ(LargestDifference(replayed.sgd->velocity()[i],
                                eager.sgd->velocity()[i]),
              0.0)
        << "momentum of " << want[i]->name;
  }
  EXPECT_EQ(LargestDifference(kept, RandomTensor({6, 64, 32, 32}, 11)), 0.0);
  // And the steps did something: the state moved from its start.
  Trainee start = Make();
  EXPECT_GT(
      LargestDifference(got[0]->value, start.model->Parameters()[0]->value),
      1e-6);
}

TEST_F(CapturedStepTest, AStepThatWaitsForTheGpuIsRefusedAndTheGpuStaysUsable) {
  const Tensor on_gpu = RandomTensor({64}, 3).To(gpu_);
  std::vector<float> host(64);
  try {
    CapturedStep graph(gpu_, [&] { CopyToHost(on_gpu, host.data()); });
    ADD_FAILURE() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("capturing a step on " + ToString(gpu_)));
    EXPECT_THAT(e.what(), HasSubstr("may not wait for the GPU"));
  }
  // The stream left capture cleanly: eager work runs and reads back.
  CopyToHost(on_gpu, host.data());
  const Tensor want = RandomTensor({64}, 3);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(host[i], want.data()[i]) << i;
}

}  // namespace
}  // namespace ringlet::nn
