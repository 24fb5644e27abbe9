// nn's CUDA kernels against the CPU ops they stand for, on random inputs,
// exactly (each is one float operation per element, as on the CPU). Skipped
// with the reason where no GPU is usable; the missing-device error is
// checked everywhere.
#include "nn/cuda/elementwise_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpu/device_probe.h"
#include "nn/cuda/cublas_library.h"
#include "nn/cuda/cuda_check.h"
#include "nn/cuda/device_context.h"
#include "nn/ops/elementwise.h"
#include "nn/optim/sgd.h"
#include "nn/tensor.h"

namespace ringlet::nn::cuda {
namespace {

TEST(DeviceContext, AMissingGpuIsAClearError) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  const int missing = report.reported;  // One past the last device.
  try {
    DeviceContext::For(missing);
    FAIL() << "expected a DeviceError for cuda:" << missing;
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:" + std::to_string(missing) +
                                         " does not exist"),
              std::string::npos)
        << e.what();
  }
}

// A bound context is the thread's until its scope ends (nested scopes
// restore the one before), and other threads keep the shared one.
TEST(DeviceContext, AScopedContextIsTheCallingThreadsOnly) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
  const int device = report.usable[0];
  DeviceContext* shared = &DeviceContext::For(device);
  const std::shared_ptr<DeviceContext> mine = DeviceContext::Create(device);
  const std::shared_ptr<DeviceContext> inner = DeviceContext::Create(device);
  EXPECT_NE(mine->stream(), shared->stream());
  EXPECT_NE(mine->cudnn(), shared->cudnn());
  {
    const ScopedContext bind(mine);
    EXPECT_EQ(&DeviceContext::For(device), mine.get());
    {
      const ScopedContext nested(inner);
      EXPECT_EQ(&DeviceContext::For(device), inner.get());
    }
    EXPECT_EQ(&DeviceContext::For(device), mine.get());
    DeviceContext* seen_elsewhere = nullptr;
    std::thread([&] { seen_elsewhere = &DeviceContext::For(device); }).join();
    EXPECT_EQ(seen_elsewhere, shared);
  }
  EXPECT_EQ(&DeviceContext::For(device), shared);
}

// cuBLAS is loaded, not linked: the loader must find it and every function
// nn calls (no GPU needed for that).
TEST(CublasLibrary, LoadsAndResolvesEveryFunctionNnCalls) {
  const CublasLibrary& lib = Cublas();
  EXPECT_NE(lib.create, nullptr);
  EXPECT_NE(lib.destroy, nullptr);
  EXPECT_NE(lib.set_stream, nullptr);
  EXPECT_NE(lib.set_math_mode, nullptr);
  EXPECT_NE(lib.sgemm, nullptr);
  EXPECT_NE(lib.sgemv, nullptr);
  EXPECT_NE(std::string(lib.status_string(CUBLAS_STATUS_NOT_INITIALIZED)), "");
  EXPECT_EQ(&Cublas(), &lib);  // Loaded once.
}

class KernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
    if (report.usable.empty()) {
      GTEST_SKIP() << "needs a GPU; " << report.reason;
    }
    context_ = &DeviceContext::For(report.usable[0]);
  }

  // A device copy of `host`, freed with the allocator by Release.
  float* Upload(const std::vector<float>& host) {
    gpu::DeviceGuard guard(context_->device());
    auto* ptr = static_cast<float*>(
        context_->allocator().Allocate(host.size() * sizeof(float)));
    RINGLET_CUDA_CHECK(
        cudaMemcpyAsync(ptr, host.data(), host.size() * sizeof(float),
                        cudaMemcpyHostToDevice, context_->stream()));
    owned_.push_back(ptr);
    return ptr;
  }
  std::vector<float> Download(const float* ptr, size_t n) {
    std::vector<float> host(n);
    gpu::DeviceGuard guard(context_->device());
    RINGLET_CUDA_CHECK(cudaMemcpyAsync(host.data(), ptr, n * sizeof(float),
                                       cudaMemcpyDeviceToHost,
                                       context_->stream()));
    context_->Synchronize();
    return host;
  }
  void TearDown() override {
    if (context_ == nullptr) return;
    context_->Synchronize();
    for (float* p : owned_) context_->allocator().Free(p);
  }
  static std::vector<float> Random(size_t n, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(gen);
    return v;
  }
  static std::vector<float> Values(const Tensor& t) {
    return std::vector<float>(t.data(), t.data() + t.numel());
  }

  DeviceContext* context_ = nullptr;
  std::vector<float*> owned_;
};

// Odd sizes, and one past a single launch's threads.
constexpr int64_t kSizes[] = {1, 255, 257, 4096 * 256 + 3};

TEST_F(KernelTest, AddAndFillMatchTheCpu) {
  for (int64_t n : kSizes) {
    const std::vector<float> a = Random(n, 3), b = Random(n, 4);
    float* out = Upload(a);
    add_forward(out, Upload(b), out, n, context_->stream());
    EXPECT_EQ(Download(out, n), Values(Add(Tensor::FromVector({n}, a),
                                           Tensor::FromVector({n}, b))));
    fill_forward(out, n, 2.5f, context_->stream());
    EXPECT_EQ(Download(out, n), std::vector<float>(n, 2.5f));
    // a += s * b: one multiply-add (fused or not), so within a rounding.
    float* scaled = Upload(a);
    add_scaled_forward(scaled, Upload(b), -0.75f, n, context_->stream());
    Tensor want = Tensor::FromVector({n}, a);
    AddScaledInPlace(want, Tensor::FromVector({n}, b), -0.75f);
    const std::vector<float> got = Download(scaled, n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(got[i], want.data()[i], 1e-6f * (1 + std::abs(a[i]))) << i;
    }
  }
}

TEST_F(KernelTest, DivideAndCountNonFiniteMatchTheCpu) {
  for (int64_t n : kSizes) {
    std::vector<float> x = Random(n, 11);
    x[n / 2] = std::nanf("");
    if (n > 2) x[n - 1] = -INFINITY;
    const Tensor cpu = Tensor::FromVector({n}, x);
    Tensor gpu_x = cpu.To(Device::Cuda(context_->device()));
    EXPECT_EQ(CountNonFinite({&gpu_x}), CountNonFinite({&cpu}));
    EXPECT_EQ(CountNonFinite({&gpu_x, &gpu_x}), 2 * CountNonFinite({&cpu}));
    Tensor cpu_scaled = cpu.Clone();
    DivideInPlace(cpu_scaled, 3.0f);
    DivideInPlace(gpu_x, 3.0f);
    const Tensor back = gpu_x.To(Device::Cpu());
    for (int64_t i = 0; i < n; ++i) {
      if (std::isfinite(cpu_scaled.data()[i])) {
        ASSERT_EQ(back.data()[i], cpu_scaled.data()[i]) << i;
      } else {
        ASSERT_FALSE(std::isfinite(back.data()[i])) << i;
      }
    }
  }
}

TEST_F(KernelTest, BiasAddAddsEachChannelsBias) {
  const int64_t batch = 3, channels = 5, spatial = 7;
  const int64_t n = batch * channels * spatial;
  const std::vector<float> x = Random(n, 5), bias = Random(channels, 6);
  float* out = Upload(x);
  bias_add_forward(out, Upload(bias), batch, channels, spatial,
                   context_->stream());
  std::vector<float> expected = x;
  for (int64_t i = 0; i < n; ++i) expected[i] += bias[(i / spatial) % channels];
  EXPECT_EQ(Download(out, n), expected);
}

TEST_F(KernelTest, SgdUpdateMatchesTheCpuStep) {
  for (float momentum : {0.0f, 0.9f}) {
    const int64_t n = 1001;
    const std::vector<float> p = Random(n, 7), g = Random(n, 8),
                             v = Random(n, 9);
    float* p_dev = Upload(p);
    float* v_dev = Upload(v);
    sgd_update_forward(p_dev, Upload(g), v_dev, n, 0.1f, momentum, 1e-4f,
                       /*skip=*/nullptr, context_->stream());
    Tensor p_cpu = Tensor::FromVector({n}, p);
    Tensor v_cpu = Tensor::FromVector({n}, v);
    SgdOptions options;
    options.lr = 0.1f;
    options.momentum = momentum;
    options.weight_decay = 1e-4f;
    SgdUpdate(p_cpu, Tensor::FromVector({n}, g), &v_cpu, options);
    EXPECT_EQ(Download(p_dev, n), Values(p_cpu)) << "momentum " << momentum;
    if (momentum > 0) {
      EXPECT_EQ(Download(v_dev, n), Values(v_cpu));
    }
  }
}

// A non-zero flag in device memory leaves parameter and velocity as they
// were; a zero one lets the step through.
TEST_F(KernelTest, SgdUpdateSkipsItselfWhenTheDeviceFlagIsSet) {
  const int64_t n = 777;
  const std::vector<float> p = Random(n, 12), g = Random(n, 13),
                           v = Random(n, 14);
  for (float flag : {0.0f, 1.0f}) {
    // The flag's bits as an unsigned int: 0u, or non-zero.
    float* skip = Upload({flag});
    float* p_dev = Upload(p);
    float* v_dev = Upload(v);
    sgd_update_forward(p_dev, Upload(g), v_dev, n, 0.1f, 0.9f, 0.0f,
                       reinterpret_cast<const unsigned int*>(skip),
                       context_->stream());
    if (flag != 0) {
      EXPECT_EQ(Download(p_dev, n), p);
      EXPECT_EQ(Download(v_dev, n), v);
    } else {
      EXPECT_NE(Download(p_dev, n), p);
    }
  }
}

// Each tensor's count in its own slot, their sum after them, in one launch
// over tensors of very different sizes (empty ones included).
TEST_F(KernelTest, CountNonFiniteEachCountsEveryTensorApart) {
  const std::vector<int64_t> sizes = {1, 0, 300000, 5, 4097};
  TensorList list;
  std::vector<unsigned int> expected;
  unsigned int expected_total = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    std::vector<float> x = Random(sizes[t], 20 + t);
    unsigned int bad = 0;
    for (int64_t i = 0; i < sizes[t]; i += 997 + 13 * t) {
      x[i] = (i % 2 == 0) ? std::nanf("") : INFINITY;
      ++bad;
    }
    list.data[list.count] = x.empty() ? nullptr : Upload(x);
    list.size[list.count] = sizes[t];
    ++list.count;
    expected.push_back(bad);
    expected_total += bad;
  }
  float* slots = Upload(std::vector<float>(sizes.size() + 1, 0.0f));
  unsigned int* counts = reinterpret_cast<unsigned int*>(slots);
  count_nonfinite_each(list, counts, counts + sizes.size(), context_->stream());
  const std::vector<float> back = Download(slots, sizes.size() + 1);
  std::vector<unsigned int> got(back.size());
  std::memcpy(got.data(), back.data(), back.size() * sizeof(float));
  expected.push_back(expected_total);
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace ringlet::nn::cuda
