// nn's ops on a GPU against the same ops on the CPU, through the public
// functions (so the dispatch is exercised too): values must agree exactly
// for these elementwise ops. Skipped with the reason without a GPU.
#include "nn/ops/cuda/cuda_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "nn/cuda/device_probe.h"
#include "nn/ops/activation.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/elementwise.h"
#include "nn/optim/sgd.h"

namespace ringlet::nn {
namespace {

using ::testing::HasSubstr;

class CudaOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const cuda::CudaDeviceReport report = cuda::ProbeCudaDevices();
    if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
    gpu_ = Device::Cuda(report.usable[0]);
  }
  static Tensor Random(const Shape& shape, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(NumElements(shape));
    for (float& x : v) x = dist(gen);
    return Tensor::FromVector(shape, v);
  }
  static std::vector<float> Values(const Tensor& t) {
    const Tensor host = t.To(Device::Cpu());
    return std::vector<float>(host.data(), host.data() + host.numel());
  }
  Device gpu_;
};

TEST_F(CudaOpsTest, ReluAndAddMatchTheCpu) {
  const Tensor x = Random({3, 4, 5, 7}, 1), dy = Random({3, 4, 5, 7}, 2);
  const Tensor y = ReluForward(x);
  const Tensor y_gpu = ReluForward(x.To(gpu_));
  EXPECT_EQ(y_gpu.device(), gpu_);
  EXPECT_EQ(Values(y_gpu), Values(y));
  EXPECT_EQ(Values(ReluBackward(y_gpu, dy.To(gpu_))),
            Values(ReluBackward(y, dy)));
  EXPECT_EQ(Values(Add(x.To(gpu_), dy.To(gpu_))), Values(Add(x, dy)));
  Tensor sum = x.To(gpu_);
  AddInPlace(sum, dy.To(gpu_));
  EXPECT_EQ(Values(sum), Values(Add(x, dy)));
}

TEST_F(CudaOpsTest, SgdStepMatchesTheCpu) {
  for (float momentum : {0.0f, 0.9f}) {
    SgdOptions options;
    options.lr = 0.05f;
    options.momentum = momentum;
    options.weight_decay = 1e-4f;
    Tensor p = Random({257}, 3), v = Random({257}, 4);
    const Tensor g = Random({257}, 5);
    Tensor p_gpu = p.To(gpu_), v_gpu = v.To(gpu_);
    SgdUpdate(p, g, &v, options);
    SgdUpdate(p_gpu, g.To(gpu_), &v_gpu, options);
    EXPECT_EQ(Values(p_gpu), Values(p)) << "momentum " << momentum;
  }
}

TEST_F(CudaOpsTest, AnOpWithoutACudaKernelYetSaysSo) {
  const Tensor x = Random({1, 1, 5, 5}, 6).To(gpu_);
  const Tensor w = Random({1, 1, 3, 3}, 7).To(gpu_);
  try {
    Conv2dForward(x, w, Tensor(), Conv2dParams{});
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no CUDA implementation yet"));
  }
}

}  // namespace
}  // namespace ringlet::nn
