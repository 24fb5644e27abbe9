// A GPU's context: the missing-device error (checked everywhere), a
// context bound to one thread, and cuBLAS loaded on demand. Cases that need
// a GPU skip with the reason where none is usable.
#include "nn/cuda/device_context.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "gpu/device_probe.h"
#include "nn/cuda/cublas_library.h"
#include "nn/device.h"

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

}  // namespace
}  // namespace ringlet::nn::cuda
