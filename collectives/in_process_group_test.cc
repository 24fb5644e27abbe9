#include "collectives/in_process_group.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/testing/rank_threads.h"

namespace ringlet::collectives {
namespace {

TEST(InProcessGroup, HoldsEveryRankAndMakesWorkingGroups) {
  InProcessGroup group(std::vector<RankDevice>(3, RankDevice::Host()));
  EXPECT_EQ(group.process(), 0);
  EXPECT_EQ(group.processes(), 1);
  EXPECT_EQ(group.first_rank(), 0);
  EXPECT_EQ(group.local_ranks(), 3);
  EXPECT_EQ(group.size(), 3);
  double values[2] = {1.5, -2};
  group.SumOverProcesses(values, 2);  // One process: unchanged.
  EXPECT_EQ(values[0], 1.5);
  EXPECT_EQ(values[1], -2);
  EXPECT_EQ(group.GatherFromProcesses("mine"),
            std::vector<std::string>{"mine"});

  testing::Group comms = group.CreateGroup("ring", {});
  ASSERT_EQ(comms.size(), 3u);
  const auto errors = testing::RunRanks(comms, [](Communicator& comm) {
    float v = static_cast<float>(comm.rank() + 1);
    comm.AllReduce(&v, &v, 1, DataType::kFloat32, ReduceOp::kSum);
    if (v != 6.0f) throw std::runtime_error("sum " + std::to_string(v));
  });
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  EXPECT_THROW(group.CreateGroup("gloo", {}), std::invalid_argument);
}

TEST(InProcessGroup, RefusesAnEmptyJob) {
  EXPECT_THROW(InProcessGroup(std::vector<RankDevice>{}),
               std::invalid_argument);
}

TEST(InProcessGroup, NcclOnHostRanksSaysTheyAreNotGpus) {
  InProcessGroup group(std::vector<RankDevice>(2, RankDevice::Host()));
  try {
    group.CreateGroup("nccl", {});
    FAIL() << "nccl took host ranks";
  } catch (const std::invalid_argument& e) {
    // Once "rank 0 is on cuda:0": GPUs the devices never named.
    EXPECT_EQ(std::string(e.what()),
              "the nccl backend runs on GPUs, and these 2 rank(s) are in "
              "host memory (CPU devices); use the ring or naive backend on "
              "CPU devices (mpi under mpirun), or put the ranks on GPUs");
  }
}

}  // namespace
}  // namespace ringlet::collectives
