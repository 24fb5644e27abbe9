// The CUDA helpers. The check macro and the refusals run on any machine
// built with CUDA; the stream/event ordering cases need a GPU and skip,
// with the runtime's reason, where there is none.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/cuda_check.h"
#include "gpu/cuda_error.h"
#include "gpu/device_guard.h"
#include "gpu/device_probe.h"
#include "gpu/stream.h"

namespace ringlet::gpu {
namespace {

TEST(CudaCheck, ThrowsCudaErrorWithFileLineCallAndRuntimeMessage) {
  try {
    RINGLET_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "expected a CudaError";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gpu/cuda_test.cc:"), std::string::npos) << what;
    EXPECT_NE(what.find("cudaErrorInvalidValue"), std::string::npos) << what;
    EXPECT_NE(what.find(cudaGetErrorString(cudaErrorInvalidValue)),
              std::string::npos)
        << what;
  }
}

TEST(CudaCheck, PassesSuccessThrough) {
  EXPECT_NO_THROW(RINGLET_CUDA_CHECK(cudaSuccess));
}

TEST(DeviceGuard, RefusesADeviceThatDoesNotExist) {
  const int count = CountCudaDevices();
  // cuda:count never exists; without a driver every device is refused.
  EXPECT_THROW(DeviceGuard guard(count), CudaError);
  EXPECT_THROW(Stream stream(count), CudaError);
}

class OnAGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (CountCudaDevices(&reason) == 0) GTEST_SKIP() << "no GPU: " << reason;
  }
};

TEST_F(OnAGpu, DeviceGuardRestoresThePreviousDevice) {
  const int count = CountCudaDevices();
  const int other = count - 1;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  {
    DeviceGuard guard(other);
    int now = -1;
    ASSERT_EQ(cudaGetDevice(&now), cudaSuccess);
    EXPECT_EQ(now, other);
  }
  int after = -1;
  ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
  EXPECT_EQ(after, 0);
}

// A copy enqueued on one stream after StreamWaitsFor sees what the other
// stream wrote before the event, though the host never waited in between.
TEST_F(OnAGpu, AnEventOrdersTwoStreams) {
  constexpr size_t kCount = 1 << 22;  // 16 MiB: long enough to overlap.
  Stream producer(0), consumer(0);
  Event written(0);
  float* a = nullptr;
  float* b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, kCount * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, kCount * sizeof(float)), cudaSuccess);
  std::vector<float> host(kCount, 0.0f);
  for (size_t i = 0; i < kCount; ++i) host[i] = static_cast<float>(i % 977);
  for (int round = 0; round < 3; ++round) {
    RINGLET_CUDA_CHECK(
        cudaMemsetAsync(b, 0, kCount * sizeof(float), consumer.get()));
    consumer.Synchronize();
    RINGLET_CUDA_CHECK(cudaMemcpyAsync(a, host.data(), kCount * sizeof(float),
                                       cudaMemcpyHostToDevice, producer.get()));
    written.Record(producer.get());
    StreamWaitsFor(consumer.get(), written);
    RINGLET_CUDA_CHECK(cudaMemcpyAsync(b, a, kCount * sizeof(float),
                                       cudaMemcpyDeviceToDevice,
                                       consumer.get()));
    consumer.Synchronize();
    EXPECT_TRUE(written.Done());
    EXPECT_TRUE(producer.Idle());
    std::vector<float> back(kCount, -1.0f);
    RINGLET_CUDA_CHECK(cudaMemcpy(back.data(), b, kCount * sizeof(float),
                                  cudaMemcpyDeviceToHost));
    ASSERT_EQ(back, host) << "round " << round;
  }
  cudaFree(a);
  cudaFree(b);
}

}  // namespace
}  // namespace ringlet::gpu
