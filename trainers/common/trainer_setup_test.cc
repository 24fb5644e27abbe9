// The parts of trainer setup that need neither data nor GPUs.
#include "trainers/common/trainer_setup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace ringlet::trainers {
namespace {

using ::testing::HasSubstr;

// Under mpirun, --devices=auto: process with local rank r takes the r-th
// usable GPU of its host.
TEST(GpuOfLocalRankTest, EachLocalRankTakesItsOwnGpu) {
  const std::vector<int> usable = {0, 2, 3};  // cuda:1 is not usable.
  EXPECT_EQ(GpuOfLocalRank(0, usable), nn::Device::Cuda(0));
  EXPECT_EQ(GpuOfLocalRank(1, usable), nn::Device::Cuda(2));
  EXPECT_EQ(GpuOfLocalRank(2, usable), nn::Device::Cuda(3));
}

TEST(GpuOfLocalRankTest, MoreProcessesThanGpusSaysHowManyFit) {
  try {
    GpuOfLocalRank(2, {0, 1});
    FAIL() << "expected a DeviceError";
  } catch (const nn::DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("local rank 2"));
    EXPECT_THAT(e.what(), HasSubstr("2 usable GPU(s) (cuda:0, cuda:1)"));
    EXPECT_THAT(e.what(), HasSubstr("start at most 2 processes per host"));
  }
}

TEST(ApplyGpuFlagsTest, GpuOnlyValuesAreRefusedOnCpuDevices) {
  TrainerFlags flags;
  ApplyGpuFlags(flags, {nn::Device::Cpu(0)});  // The defaults are fine.
  flags.conv_algorithms = "heuristic";
  EXPECT_THROW(ApplyGpuFlags(flags, {nn::Device::Cpu(0)}), nn::DeviceError);
  flags.conv_algorithms = "fastest";
  EXPECT_THROW(ApplyGpuFlags(flags, {nn::Device::Cpu(0)}),
               std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::trainers
