#include "trainers/common/flags/trainer_devices.h"

#include <string>
#include <vector>

#include "collectives/backends/nccl.h"
#include "gtest/gtest.h"

namespace ringlet::trainers {
namespace {

const std::string kNccl = collectives::NcclCompiledIn() ? "nccl" : "ring";

TEST(DevicePlacement, NamesTheHostAndItsGpusOrCpu) {
  EXPECT_EQ(DevicePlacement("h", {nn::Device::Cuda(0), nn::Device::Cuda(3)}),
            "h 0,3");
  EXPECT_EQ(DevicePlacement("h", {nn::Device::Cuda(0), nn::Device::Cpu(0)}),
            "h cpu");
}

TEST(BackendForPlacements, NcclOnlyWhereEveryRankHasAGpuOfItsOwn) {
  EXPECT_EQ(BackendForPlacements("auto", {"a 0", "a 1", "b 0"}), kNccl);
  EXPECT_EQ(BackendForPlacements("auto", {"a 0,1"}), kNccl);
  // Two processes of one host on its GPU 0: NCCL would refuse them.
  EXPECT_EQ(BackendForPlacements("auto", {"a 0", "a 0"}), "ring");
  EXPECT_EQ(BackendForPlacements("auto", {"a 0,0"}), "ring");
  EXPECT_EQ(BackendForPlacements("auto", {"a 0", "b cpu"}), "ring");
}

TEST(BackendForPlacements, KeepsANamedBackend) {
  EXPECT_EQ(BackendForPlacements("nccl", {"a 0", "a 0"}), "nccl");
  EXPECT_EQ(BackendForPlacements("naive", {"a 0"}), "naive");
}

TEST(ResolveBackend, AloneDecidesFromItsOwnDevices) {
  EXPECT_EQ(ResolveBackend("auto", {nn::Device::Cpu(0)}), "ring");
  EXPECT_EQ(ResolveBackend("auto", {nn::Device::Cuda(0), nn::Device::Cuda(0)}),
            "ring");
  EXPECT_EQ(ResolveBackend("auto", {nn::Device::Cuda(0), nn::Device::Cuda(1)}),
            kNccl);
}

}  // namespace
}  // namespace ringlet::trainers
