// Both d2l models, one training step on a GPU against the same step on the
// CPU: a model built on the CPU, moved with To(), runs there unchanged.
// Skipped with the reason without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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
    const Tensor host = gpu.To(Device::Cpu());
    ASSERT_EQ(host.shape(), cpu.shape()) << what;
    float largest = 0, worst = 0;
    for (int64_t i = 0; i < cpu.numel(); ++i) {
      largest = std::max(largest, std::abs(cpu.data()[i]));
      worst = std::max(worst, std::abs(host.data()[i] - cpu.data()[i]));
    }
    EXPECT_LE(worst, 1e-3f * (1 + largest)) << what;
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

TEST_F(ModelsOnCudaTest, ResNet18StepMatchesTheCpu) {
  auto cpu = MakeResNet18();
  InitParameters(*cpu, InitScheme::kNormal001, 3);
  auto gpu = MakeResNet18();
  InitParameters(*gpu, InitScheme::kNormal001, 3);
  gpu->To(gpu_);
  const Tensor x = RandomTensor({8, 1, 28, 28}, 4, 0.0f, 1.0f);
  std::vector<int32_t> labels(8);
  for (int i = 0; i < 8; ++i) labels[i] = (3 * i) % 10;
  SgdOptions options;
  options.lr = 0.1f;
  Sgd sgd_cpu(cpu->Parameters(), options), sgd_gpu(gpu->Parameters(), options);
  for (auto [model, sgd, input] :
       {std::make_tuple(cpu.get(), &sgd_cpu, x),
        std::make_tuple(gpu.get(), &sgd_gpu, x.To(gpu_))}) {
    model->ZeroGrad();
    const LossResult loss = SoftmaxCrossEntropy(
        model->Forward(input), labels.data(), Reduction::kMean);
    model->Backward(loss.dlogits);
    sgd->Step();
  }
  const std::vector<Parameter*> want = cpu->Parameters(),
                                got = gpu->Parameters();
  for (size_t i = 0; i < want.size(); ++i) {
    ExpectClose(got[i]->value, want[i]->value, want[i]->name);
  }
  const std::vector<Buffer*> want_b = cpu->Buffers(), got_b = gpu->Buffers();
  for (size_t i = 0; i < want_b.size(); ++i) {
    ExpectClose(got_b[i]->value, want_b[i]->value, want_b[i]->name);
  }
}

}  // namespace
}  // namespace ringlet::nn
