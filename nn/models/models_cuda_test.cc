// Both d2l models, one training step on a GPU against the same step on the
// CPU: a model built on the CPU, moved with To(), runs there unchanged.
// Skipped with the reason without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/device_probe.h"
#include "nn/layers/init.h"
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

TEST_F(ModelsOnCudaTest, LeNetGradientsMatchTheCpu) {
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
  EXPECT_NEAR(l_gpu.loss, l_cpu.loss, 1e-3 * (1 + l_cpu.loss));
  const LeNetParams g_cpu = LeNetBackward(cpu, a_cpu, l_cpu.dlogits);
  const LeNetParams g_gpu = LeNetBackward(gpu, a_gpu, l_gpu.dlogits);
  const std::vector<const Tensor*> want = g_cpu.All(), got = g_gpu.All();
  for (size_t i = 0; i < want.size(); ++i) {
    ExpectClose(*got[i], *want[i], "LeNet gradient " + std::to_string(i));
  }
}

// One SGD step of ResNet-18 (normal(0.01) init, batch 8, lr 0.1). The first
// H100 run found the first convolution's weights 3.0e-3 apart after the
// step against a bound of 1.2e-3, with every other parameter within it. The
// layer-by-layer walk (layers_cuda_test) traced that to rounding flipping
// ReLUs whose inputs lie within rounding of 0: models on the CPU, their
// input perturbed by 1e-6 (relative; three draws, as a flip is hit or
// missed by chance), measure what rounding-sized noise does to the step
// here, and a parameter may differ by up to 10x the most it moved.
TEST_F(ModelsOnCudaTest, ResNet18StepMatchesTheCpu) {
  constexpr int kDraws = 3;
  auto cpu = MakeResNet18(), gpu = MakeResNet18();
  std::vector<std::unique_ptr<Sequential>> noisy;
  for (int i = 0; i < kDraws; ++i) noisy.push_back(MakeResNet18());
  InitParameters(*cpu, InitScheme::kNormal001, 3);
  InitParameters(*gpu, InitScheme::kNormal001, 3);
  for (auto& m : noisy) InitParameters(*m, InitScheme::kNormal001, 3);
  gpu->To(gpu_);
  const Tensor x = RandomTensor({8, 1, 28, 28}, 4, 0.0f, 1.0f);
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
  step(*cpu, x);
  step(*gpu, x.To(gpu_));
  for (int i = 0; i < kDraws; ++i) {
    step(*noisy[i], testing::Perturbed(x, 1e-6, 5 + i));
  }
  const std::vector<Parameter*> want = cpu->Parameters(),
                                got = gpu->Parameters();
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
  const std::vector<Buffer*> want_b = cpu->Buffers(), got_b = gpu->Buffers();
  for (size_t i = 0; i < want_b.size(); ++i) {
    ExpectClose(got_b[i]->value, want_b[i]->value, want_b[i]->name);
  }
}

}  // namespace
}  // namespace ringlet::nn
