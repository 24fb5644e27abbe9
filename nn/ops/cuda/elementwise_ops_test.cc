// nn's own CUDA kernels for elementwise ops, non-finite counts and the SGD
// update against the CPU ops they stand for, through the public functions,
// on random inputs of odd sizes and sizes past one launch's threads:
// exactly (each is one float operation per element, as on the CPU), the
// scaled add within a rounding (fused or not). Skipped with the reason
// without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gpu/device_guard.h"
#include "gpu/device_probe.h"
#include "nn/cuda/device_context.h"
#include "nn/ops/cuda/channel_kernels.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/non_finite.h"
#include "nn/optim/sgd.h"
#include "nn/tensor.h"

namespace ringlet::nn {
namespace {

class ElementwiseOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
    if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
    gpu_ = Device::Cuda(report.usable[0]);
  }
  static std::vector<float> Random(int64_t n, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(gen);
    return v;
  }
  Tensor OnGpu(const std::vector<float>& v) const {
    return Tensor::FromVector({static_cast<int64_t>(v.size())}, v).To(gpu_);
  }
  static std::vector<float> Values(const Tensor& t) {
    const Tensor host = t.To(Device::Cpu());
    return std::vector<float>(host.data(), host.data() + host.numel());
  }
  Device gpu_;
};

// Odd sizes, and one past a single launch's threads.
constexpr int64_t kSizes[] = {1, 255, 257, 4096 * 256 + 3};

TEST_F(ElementwiseOpsTest, AddFillAndScaledAddMatchTheCpu) {
  for (int64_t n : kSizes) {
    const std::vector<float> a = Random(n, 3), b = Random(n, 4);
    const Tensor cpu_a = Tensor::FromVector({n}, a);
    const Tensor cpu_b = Tensor::FromVector({n}, b);
    EXPECT_EQ(Values(Add(OnGpu(a), OnGpu(b))), Values(Add(cpu_a, cpu_b))) << n;
    Tensor sum = OnGpu(a);
    AddInPlace(sum, OnGpu(b));
    EXPECT_EQ(Values(sum), Values(Add(cpu_a, cpu_b))) << n;
    sum.Fill(2.5f);
    EXPECT_EQ(Values(sum), std::vector<float>(n, 2.5f)) << n;
    Tensor scaled = OnGpu(a);
    AddScaledInPlace(scaled, OnGpu(b), -0.75f);
    Tensor want = cpu_a.Clone();
    AddScaledInPlace(want, cpu_b, -0.75f);
    const std::vector<float> got = Values(scaled);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(got[i], want.data()[i], 1e-6f * (1 + std::abs(a[i]))) << i;
    }
  }
}

TEST_F(ElementwiseOpsTest, DivideAndCountNonFiniteMatchTheCpu) {
  for (int64_t n : kSizes) {
    std::vector<float> x = Random(n, 11);
    x[n / 2] = std::nanf("");
    if (n > 2) x[n - 1] = -INFINITY;
    const Tensor cpu = Tensor::FromVector({n}, x);
    Tensor gpu_x = cpu.To(gpu_);
    EXPECT_EQ(CountNonFinite({&gpu_x}), CountNonFinite({&cpu}));
    EXPECT_EQ(CountNonFinite({&gpu_x, &gpu_x}), 2 * CountNonFinite({&cpu}));
    Tensor cpu_scaled = cpu.Clone();
    DivideInPlace(cpu_scaled, 3.0f);
    DivideInPlace(gpu_x, 3.0f);
    const std::vector<float> back = Values(gpu_x);
    for (int64_t i = 0; i < n; ++i) {
      if (std::isfinite(cpu_scaled.data()[i])) {
        ASSERT_EQ(back[i], cpu_scaled.data()[i]) << i;
      } else {
        ASSERT_FALSE(std::isfinite(back[i])) << i;
      }
    }
  }
}

// Each tensor's count in its own slot, over tensors of very different sizes
// (empty ones included) and more tensors than one launch takes.
TEST_F(ElementwiseOpsTest, NonFiniteCountsCountEveryTensorApart) {
  std::vector<Tensor> tensors;
  std::vector<int64_t> expected;
  for (int t = 0; t < 53; ++t) {
    const int64_t size = std::vector<int64_t>{1, 0, 300000, 5, 4097}[t % 5];
    std::vector<float> x = Random(size, 20 + t);
    int64_t bad = 0;
    for (int64_t i = 0; i < size; i += 997 + 13 * t) {
      x[i] = (i % 2 == 0) ? std::nanf("") : INFINITY;
      ++bad;
    }
    tensors.push_back(Tensor::FromVector({size}, x).To(gpu_));
    expected.push_back(bad);
  }
  std::vector<const Tensor*> list;
  for (const Tensor& t : tensors) list.push_back(&t);
  const NonFiniteCounts counts = QueueCountNonFinite(list);
  EXPECT_EQ(counts.Read(), expected);
}

TEST_F(ElementwiseOpsTest, SgdUpdateMatchesTheCpuStep) {
  for (float momentum : {0.0f, 0.9f}) {
    const int64_t n = 1001;
    const std::vector<float> p = Random(n, 7), g = Random(n, 8),
                             v = Random(n, 9);
    SgdOptions options;
    options.lr = 0.1f;
    options.momentum = momentum;
    options.weight_decay = 1e-4f;
    Tensor p_gpu = OnGpu(p), v_gpu = OnGpu(v);
    SgdUpdate(p_gpu, OnGpu(g), &v_gpu, options);
    Tensor p_cpu = Tensor::FromVector({n}, p);
    Tensor v_cpu = Tensor::FromVector({n}, v);
    SgdUpdate(p_cpu, Tensor::FromVector({n}, g), &v_cpu, options);
    EXPECT_EQ(Values(p_gpu), Values(p_cpu)) << "momentum " << momentum;
    if (momentum > 0) {
      EXPECT_EQ(Values(v_gpu), Values(v_cpu));
    }
  }
}

// A non-finite count on the device leaves parameter and velocity as they
// were; a zero count lets the step through.
TEST_F(ElementwiseOpsTest, SgdUpdateSkipsItselfOnANonFiniteCount) {
  const int64_t n = 777;
  const std::vector<float> p = Random(n, 12), g = Random(n, 13),
                           v = Random(n, 14);
  SgdOptions options;
  options.lr = 0.1f;
  options.momentum = 0.9f;
  for (bool finite : {true, false}) {
    std::vector<float> checked = Random(5, 15);
    if (!finite) checked[3] = std::nanf("");
    const Tensor checked_gpu = OnGpu(checked);
    const NonFiniteCounts counts = QueueCountNonFinite({&checked_gpu});
    Tensor p_gpu = OnGpu(p), v_gpu = OnGpu(v);
    SgdUpdate(p_gpu, OnGpu(g), &v_gpu, options, &counts);
    if (finite) {
      EXPECT_NE(Values(p_gpu), p);
    } else {
      EXPECT_EQ(Values(p_gpu), p);
      EXPECT_EQ(Values(v_gpu), v);
    }
  }
}

// The per-channel bias of convolutions and linear layers, in both element
// types (bfloat16: each sum in float32 rounded once, as Add).
TEST_F(ElementwiseOpsTest, BiasAddAddsEachChannelsBias) {
  const int64_t batch = 3, channels = 5, spatial = 7;
  const int64_t n = batch * channels * spatial;
  const std::vector<float> x = Random(n, 5), bias = Random(channels, 6);
  std::vector<float> expected = x;
  for (int64_t i = 0; i < n; ++i) expected[i] += bias[(i / spatial) % channels];
  const Tensor bias_gpu = OnGpu(bias);
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    Tensor out = OnGpu(x).To(dtype);
    cuda::DeviceContext& context = cuda::DeviceContext::For(gpu_.index);
    gpu::DeviceGuard guard(gpu_.index);
    cuda_ops::bias_add(out.raw_data(), dtype, bias_gpu.device_data(), batch,
                       channels, spatial, context.stream());
    // bfloat16: the float32 sum of the rounded input, rounded once.
    const Tensor x_rounded =
        Tensor::FromVector({n}, x).To(dtype).To(DType::kFloat32);
    std::vector<float> want(n);
    for (int64_t i = 0; i < n; ++i) {
      want[i] = x_rounded.data()[i] + bias[(i / spatial) % channels];
    }
    const Tensor want_t =
        Tensor::FromVector({n}, want).To(dtype).To(DType::kFloat32);
    EXPECT_EQ(Values(out.To(DType::kFloat32)), Values(want_t))
        << ToString(dtype);
    if (dtype == DType::kFloat32) {
      EXPECT_EQ(Values(out), expected);
    }
  }
}

}  // namespace
}  // namespace ringlet::nn
