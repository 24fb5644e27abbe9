// Both d2l models, one training step on a GPU against the same step on the
// CPU: a model built on the CPU, moved with To(), runs there unchanged.
// Skipped with the reason without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/device_probe.h"
#include "nn/compute_options.h"
#include "nn/layers/init.h"
#include "nn/memory_format.h"
#include "nn/models/lenet.h"
#include "nn/models/resnet.h"
#include "nn/ops/loss.h"
#include "nn/optim/sgd.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::LargestDifference;
using testing::LargestMagnitude;
using testing::RandomTensor;

class ModelsOnCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // RINGLET_GPU_TEST_ON_CPU=1 (models_cuda_harness_test) runs the file
    // CPU against CPU, so the comparisons are exercised without a GPU.
    const char* on_cpu = std::getenv("RINGLET_GPU_TEST_ON_CPU");
    if (on_cpu != nullptr && std::string(on_cpu) == "1") {
      gpu_ = Device::Cpu();
      return;
    }
    const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
    if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
    gpu_ = Device::Cuda(report.usable[0]);
  }
  // Largest difference relative to the tensor's largest value.
  static void ExpectClose(const Tensor& gpu, const Tensor& cpu,
                          const std::string& what) {
    EXPECT_LE(LargestDifference(gpu, cpu), 1e-3 * (1 + LargestMagnitude(cpu)))
        << what;
  }
  Device gpu_;
};

// One LeNet step on `gpu` against the CPU's, the GPU's activations in
// `layout` (--layout): gradients within 1e-3, float32 NCHW whatever it.
void ExpectLeNetGradientsMatchTheCpu(Device gpu_, MemoryFormat layout) {
  const auto format = ScopedCompute(&ComputeOptions::gpu_layout, layout);
  const LeNetParams cpu = LeNetParams::Init(1, InitScheme::kKaimingNormal);
  const LeNetParams gpu = cpu.To(gpu_);
  const Tensor x = RandomTensor({16, 1, 28, 28}, 2, 0.0f, 1.0f);
  std::vector<int32_t> labels(16);
  for (int i = 0; i < 16; ++i) labels[i] = i % 10;
  LeNetActivations a_cpu, a_gpu;
  const LossResult l_cpu = SoftmaxCrossEntropy(LeNetForward(cpu, x, &a_cpu),
                                               labels.data(), Reduction::kSum);
  const LossResult l_gpu = SoftmaxCrossEntropy(
      LeNetForward(gpu, x.To(gpu_), &a_gpu), labels.data(), Reduction::kSum);
  if (gpu_.is_cuda()) {
    EXPECT_EQ(a_gpu.a2.memory_format(), layout);
  }
  EXPECT_NEAR(l_gpu.loss, l_cpu.loss, 1e-3 * (1 + l_cpu.loss));
  const LeNetParams g_cpu = LeNetBackward(cpu, a_cpu, l_cpu.dlogits);
  const LeNetParams g_gpu = LeNetBackward(gpu, a_gpu, l_gpu.dlogits);
  const std::vector<const Tensor*> want = g_cpu.All(), got = g_gpu.All();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i]->memory_format(), MemoryFormat::kContiguous);
    EXPECT_LE(LargestDifference(*got[i], *want[i]),
              1e-3 * (1 + LargestMagnitude(*want[i])))
        << "LeNet gradient " << i;
  }
}

TEST_F(ModelsOnCudaTest, LeNetGradientsMatchTheCpu) {
  ExpectLeNetGradientsMatchTheCpu(gpu_, MemoryFormat::kContiguous);
}

TEST_F(ModelsOnCudaTest, LeNetChannelsLastGradientsMatchTheCpu) {
  ExpectLeNetGradientsMatchTheCpu(gpu_, MemoryFormat::kChannelsLast);
}

// Ends with "gamma" or "beta": a batch norm's scale or shift.
bool EndsWith(const std::string& name, const std::string& tail) {
  return name.size() >= tail.size() &&
         name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
}

// Every batch norm's scale in [0.5, 1.5] and shift in [-0.3, 0.3]: where
// training takes them. At initialisation (1 and 0) a fault in a term that
// scales with gamma - 1 or with beta, or that ignores either, is invisible.
void MoveBatchNormsAwayFromInit(Sequential& model) {
  uint64_t seed = 100;
  for (Parameter* p : model.Parameters()) {
    if (EndsWith(p->name, "gamma")) {
      p->value = RandomTensor(p->value.shape(), ++seed, 0.5f, 1.5f);
    } else if (EndsWith(p->name, "beta")) {
      p->value = RandomTensor(p->value.shape(), ++seed, -0.3f, 0.3f);
    }
  }
}

// `steps` SGD steps of ResNet-18 (batch 8, 28x28, lr 0.1) from the state
// `init` makes, on the GPU and on the CPU. The first H100 run found the
// first convolution's weights 3.0e-3 apart after a step against a bound of
// 1.2e-3, with every other parameter within it. The layer-by-layer walk
// (layers_cuda_test) traced that to rounding flipping ReLUs whose inputs
// lie within rounding of 0: models on the CPU, their input perturbed by
// 1e-6 (relative; three draws, as a flip is hit or missed by chance),
// measure what rounding-sized noise does to the steps here, and a
// parameter may differ by up to 10x the most it moved.
void ExpectResNet18StepsMatch(const Device& gpu,
                              const std::function<void(Sequential&)>& init,
                              int steps) {
  constexpr int kDraws = 3;
  auto cpu = MakeResNet18(), on_gpu = MakeResNet18();
  std::vector<std::unique_ptr<Sequential>> noisy;
  for (int i = 0; i < kDraws; ++i) noisy.push_back(MakeResNet18());
  init(*cpu);
  init(*on_gpu);
  for (auto& m : noisy) init(*m);
  on_gpu->To(gpu);
  std::vector<int32_t> labels(8);
  for (int i = 0; i < 8; ++i) labels[i] = (3 * i) % 10;
  SgdOptions options;
  options.lr = 0.1f;
  auto step = [&](Sequential& model, const Tensor& input) {
    Sgd sgd(model.Parameters(), options);
    model.ZeroGrad();
    const LossResult loss = SoftmaxCrossEntropy(
        model.Forward(input), labels.data(), Reduction::kMean);
    model.Backward(loss.dlogits);
    sgd.Step();
  };
  for (int s = 0; s < steps; ++s) {
    const Tensor x = RandomTensor({8, 1, 28, 28}, 4 + 10 * s, 0.0f, 1.0f);
    step(*cpu, x);
    step(*on_gpu, x.To(gpu));
    for (int i = 0; i < kDraws; ++i) {
      step(*noisy[i], testing::Perturbed(x, 1e-6, 5 + i + 10 * s));
    }
  }
  const std::vector<Parameter*> want = cpu->Parameters(),
                                got = on_gpu->Parameters();
  for (size_t i = 0; i < want.size(); ++i) {
    const double largest = LargestMagnitude(want[i]->value);
    const double gpu_off = LargestDifference(got[i]->value, want[i]->value);
    double noise = 0;
    for (auto& m : noisy) {
      noise = std::max(
          noise, LargestDifference(m->Parameters()[i]->value, want[i]->value));
    }
    if (gpu_off > 1e-3 * (1 + largest)) {
      std::printf("%-34s gpu off by %.3g, 1e-6 noise moves it %.3g\n",
                  want[i]->name.c_str(), gpu_off, noise);
    }
    EXPECT_LE(gpu_off, std::max(1e-3 * (1 + largest), 10 * noise))
        << want[i]->name;
  }
  // The running statistics are averages of the same activations the
  // weights' gradients come from, so they get the same bound: on the CPU
  // alone the 1e-6 input noise moves block4.1.bn1's running mean by 0.0059
  // and its variance by 0.013 (8 values per channel at 1x1), what the H100
  // was off by. RINGLET_PRINT_NOISE=1 prints every buffer's figures.
  const std::vector<Buffer*> want_b = cpu->Buffers(), got_b = on_gpu->Buffers();
  for (size_t i = 0; i < want_b.size(); ++i) {
    const double largest = LargestMagnitude(want_b[i]->value);
    const double gpu_off = LargestDifference(got_b[i]->value, want_b[i]->value);
    double noise = 0;
    for (auto& m : noisy) {
      noise = std::max(
          noise, LargestDifference(m->Buffers()[i]->value, want_b[i]->value));
    }
    if (std::getenv("RINGLET_PRINT_NOISE") != nullptr ||
        gpu_off > 1e-3 * (1 + largest)) {
      std::printf("%-34s gpu off by %.3g, 1e-6 noise moves it %.3g\n",
                  want_b[i]->name.c_str(), gpu_off, noise);
    }
    EXPECT_LE(gpu_off, std::max(1e-3 * (1 + largest), 10 * noise))
        << want_b[i]->name;
  }
}

// normal(0.01) init, one step.
TEST_F(ModelsOnCudaTest, ResNet18StepMatchesTheCpu) {
  ExpectResNet18StepsMatch(
      gpu_, [](Sequential& m) { InitParameters(m, InitScheme::kNormal001, 3); },
      1);
}

// --layout=nhwc: the first convolution takes the images channels-last,
// every activation after it stays so, Flatten hands the linear layer NCHW
// features; the step matches the CPU's as the NCHW step does.
TEST_F(ModelsOnCudaTest, ResNet18ChannelsLastStepMatchesTheCpu) {
  const auto nhwc =
      ScopedCompute(&ComputeOptions::gpu_layout, MemoryFormat::kChannelsLast);
  ExpectResNet18StepsMatch(
      gpu_, [](Sequential& m) { InitParameters(m, InitScheme::kNormal001, 3); },
      1);
}

// Issue 12's open question: on the H100 the GPU's second-epoch training
// loss sat 5-10% above the CPU's. The one-step comparison above starts at
// initialisation; this one starts where training goes (Kaiming weights,
// batch norms scaled and shifted) and takes two steps.
TEST_F(ModelsOnCudaTest, ResNet18StepsMatchTheCpuAwayFromInit) {
  ExpectResNet18StepsMatch(
      gpu_,
      [](Sequential& m) {
        InitParameters(m, InitScheme::kKaimingNormal, 9);
        MoveBatchNormsAwayFromInit(m);
      },
      2);
}

}  // namespace
}  // namespace ringlet::nn
