#include "gpu/device_probe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace ringlet::gpu {
namespace {

TEST(DeviceProbe, MatchesTheBuildConfiguration) {
  // RINGLET_EXPECT_CUDA comes from the BUILD file's if_cuda, so a select()
  // that picked the wrong implementation fails here.
  EXPECT_EQ(ProbeCudaDevices().compiled_with_cuda, RINGLET_EXPECT_CUDA == 1);
}

TEST(DeviceProbe, ReportIsConsistent) {
  const CudaDeviceReport report = ProbeCudaDevices();
  EXPECT_GE(report.reported, 0);
  EXPECT_LE(static_cast<int>(report.usable.size()), report.reported);
  EXPECT_EQ(static_cast<int>(report.descriptions.size()), report.reported);
  for (int index : report.usable) {
    EXPECT_GE(index, 0);
    EXPECT_LT(index, report.reported);
  }
  if (report.usable.empty()) {
    EXPECT_FALSE(report.reason.empty()) << "no GPU must come with a reason";
  }
}

TEST(DeviceProbe, RepeatedCallsAgree) {
  const CudaDeviceReport first = ProbeCudaDevices();
  const CudaDeviceReport second = ProbeCudaDevices();
  EXPECT_EQ(first.reported, second.reported);
  EXPECT_EQ(first.usable, second.usable);
}

TEST(DeviceProbe, CountAgreesWithTheReport) {
  std::string reason;
  const int count = CountCudaDevices(&reason);
  EXPECT_EQ(count, ProbeCudaDevices().reported);
  if (count == 0) {
    EXPECT_FALSE(reason.empty()) << "no GPU needs a reason";
  }
  EXPECT_EQ(CountCudaDevices(), count);  // The reason is optional.
}

TEST(DeviceProbe, NoDriverSaysNoGpuNotUpdateTheDriver) {
  // Where no NVIDIA driver is loaded (this repository's CI), the runtime
  // reports an "insufficient" driver: the reason must say there is none.
  if (access("/proc/driver/nvidia/version", F_OK) == 0) {
    GTEST_SKIP() << "an NVIDIA driver is loaded here";
  }
  const CudaDeviceReport report = ProbeCudaDevices();
  ASSERT_TRUE(report.usable.empty());
  if (!report.compiled_with_cuda) {
    EXPECT_NE(report.reason.find("without CUDA"), std::string::npos)
        << report.reason;
    return;
  }
  EXPECT_EQ(report.reason.rfind("this machine has no usable NVIDIA GPU or "
                                "driver (CUDA runtime: ",
                                0),
            0u)
      << report.reason;
  std::string reason;
  CountCudaDevices(&reason);
  EXPECT_EQ(reason, report.reason);
}

}  // namespace
}  // namespace ringlet::gpu
