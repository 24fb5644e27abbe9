// GPU lists are checked before any GPU is touched, the same way in builds
// with and without CUDA; these run everywhere.
#include "collectives/backends/gpu_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/backends/cuda_ring.h"
#include "collectives/backends/nccl.h"
#include "collectives/collectives.h"

namespace ringlet::collectives {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(GpuList, NamesTheList) {
  EXPECT_EQ(GpuListName({1, 0, 1}), "[cuda:1, cuda:0, cuda:1]");
  EXPECT_EQ(GpuListName({}), "[]");
}

TEST(GpuList, RepeatsAreFineForTheRingAndRefusedForNccl) {
  EXPECT_NO_THROW(CheckGpuList("ring", {0, 0, 0}, false));
  EXPECT_THAT(ErrorOf([] {
                CheckGpuList("nccl", {2, 0, 2}, true);
              }),
              AllOf(HasSubstr("ranks 0 and 2"), HasSubstr("both on cuda:2"),
                    HasSubstr("--backend=ring")));
  EXPECT_THROW(CheckGpuList("nccl", {2, 0, 2}, true), CollectiveError);
  EXPECT_THROW(CheckGpuList("ring", {}, false), std::invalid_argument);
  EXPECT_THROW(CheckGpuList("ring", {0, -1}, false), std::invalid_argument);
}

TEST(GpuList, AGpuBeyondTheMachineIsNamedWithTheReason) {
  EXPECT_NO_THROW(CheckGpusExist("ring", {0, 1, 0}, 2, ""));
  EXPECT_THAT(ErrorOf([] {
                CheckGpusExist("ring", {0, 3}, 2, "driver too old");
              }),
              AllOf(HasSubstr("rank 1 is on cuda:3"), HasSubstr("has 2 GPU(s)"),
                    HasSubstr("(driver too old)")));
}

// Through the public entry points, in this build whatever it has.
TEST(GpuList, CreateGroupChecksTheListFirst) {
  EXPECT_THROW(CreateGroup("ring", {RankDevice::Host(), RankDevice::Gpu(0)}),
               std::invalid_argument);
  EXPECT_THAT(ErrorOf([] {
                CreateGroup("nccl", {RankDevice::Gpu(0), RankDevice::Gpu(0)});
              }),
              HasSubstr("both on cuda:0"));
  // A GPU that no machine here has: an error, whichever the build.
  EXPECT_THROW(CreateCudaRingGroup({0, 4096}), CollectiveError);
}

}  // namespace
}  // namespace ringlet::collectives
