// The CUDA backends are registered exactly when the build has CUDA; without
// them, each entry point checks its arguments as a CUDA build does and then
// says the backend is not in this build. Runs in both kinds of build (CI
// runs it with --config=cpu_only too).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/backends/cuda_ring.h"
#include "collectives/backends/host_staged.h"
#include "collectives/backends/nccl.h"

namespace ringlet::collectives {
namespace {

using ::testing::HasSubstr;

constexpr bool kBuiltWithCuda = RINGLET_EXPECT_CUDA == 1;

std::string CollectiveErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const CollectiveError& e) {
    return e.what();
  }
  return "";
}

TEST(Registration, MatchesTheBuild) {
  EXPECT_EQ(NcclCompiledIn(), kBuiltWithCuda);
  EXPECT_EQ(CudaRingCompiledIn(), kBuiltWithCuda);
}

TEST(Registration, ListsAreCheckedInEveryBuild) {
  // NCCL's one rank per GPU is refused before any library is asked.
  EXPECT_THAT(CollectiveErrorOf([] {
                CreateNcclGroup({0, 0});
              }),
              HasSubstr("cuda:0"));
  EXPECT_THROW(CreateNcclGroup(0), std::invalid_argument);
  EXPECT_THROW(CreateCudaRingGroup({}, "ring"), std::invalid_argument);
}

TEST(Registration, WithoutCudaEachBackendSaysItIsNotInTheBuild) {
  if (kBuiltWithCuda) GTEST_SKIP() << "this build has CUDA";
  EXPECT_THAT(CollectiveErrorOf([] { CreateNcclGroup(std::vector<int>{0}); }),
              HasSubstr("the nccl backend is not in this build"));
  EXPECT_THAT(CollectiveErrorOf([] {
                CreateNcclRanks(NcclProcessLayout{}, [](void*, size_t) {});
              }),
              HasSubstr("the nccl backend is not in this build"));
  EXPECT_THAT(CollectiveErrorOf([] {
                CreateCudaRingGroup({0, 0}, "ring");
              }),
              HasSubstr("the CUDA transport is not in this build"));
  EXPECT_THAT(CollectiveErrorOf([] { CudaStaging(1); }),
              HasSubstr("cuda:1 cannot take part in a collective: this build "
                        "has no CUDA"));
}

}  // namespace
}  // namespace ringlet::collectives
