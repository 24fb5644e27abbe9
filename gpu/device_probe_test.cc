#include "gpu/device_probe.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ringlet::gpu
