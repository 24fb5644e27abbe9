// The collectives contract across processes under mpirun (see
// mpi_contract_test.sh): every process runs these tests in the same order,
// each holding one or two ranks of a group that spans all of them. The
// contract itself (collectives/testing/process_contract.h) runs over each
// backend that works between processes (ring, naive over MPI and host
// memory; mpi); the rest is what only MpiWorld does.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "collectives/api/collective_error.h"
#include "collectives/backends/mpi/mpi_world.h"
#include "collectives/testing/process_contract.h"
#include "collectives/testing/rank_threads.h"

namespace ringlet::collectives::mpi {
namespace {

using testing::Group;
using testing::JobUnderTest;
using testing::ProcessContractTest;
using testing::ProcessSetup;

// This process's ranks of an mpirun job.
class MpiJob : public JobUnderTest {
 public:
  MpiJob(const std::string& backend, int local_ranks)
      : world_(MpiWorld::Join(local_ranks)),
        group_(world_->CreateGroup(backend,
                                   CommOptions{std::chrono::seconds(60)})) {}
  int size() const override { return world_->size(); }
  Group& group() override { return group_; }
  double SumOverJob(double value) override {
    world_->SumOverProcesses(&value, 1);
    return value;
  }
  const MpiWorld& world() const { return *world_; }

 private:
  std::shared_ptr<MpiWorld> world_;
  Group group_;
};

std::vector<ProcessSetup> Setups() {
  std::vector<ProcessSetup> setups;
  for (const auto& [backend, local_ranks] :
       std::vector<std::pair<std::string, int>>{
           {"ring", 1}, {"ring", 2}, {"naive", 1}, {"naive", 2}, {"mpi", 1}}) {
    setups.push_back(
        {backend + "_" + std::to_string(local_ranks) + "_per_process",
         [backend = backend, local_ranks = local_ranks] {
           return std::make_unique<MpiJob>(backend, local_ranks);
         }});
  }
  return setups;
}

INSTANTIATE_TEST_SUITE_P(Backends, ProcessContractTest,
                         ::testing::ValuesIn(Setups()),
                         testing::ProcessSetupName);

// The job's ranks laid out over its processes, each process's contiguous.
TEST(MpiWorldTest, LayoutCoversEveryRankOnce) {
  for (const int local_ranks : {1, 2}) {
    MpiJob job("ring", local_ranks);
    const MpiWorld& world = job.world();
    EXPECT_EQ(world.size(), world.processes() * local_ranks);
    EXPECT_EQ(world.first_rank(), world.process() * local_ranks);
    for (size_t i = 0; i < job.group().size(); ++i) {
      EXPECT_EQ(job.group()[i]->rank(),
                world.first_rank() + static_cast<int>(i));
      EXPECT_EQ(job.group()[i]->size(), world.size());
      EXPECT_EQ(job.group()[i]->backend(), "ring");
    }
  }
}

TEST(MpiWorldTest, MpiBackendRefusesTwoRanksPerProcess) {
  auto world = MpiWorld::Join(2);
  try {
    world->CreateGroup("mpi", {});
    FAIL() << "expected a CollectiveError";
  } catch (const CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("one rank per process"),
              std::string::npos)
        << e.what();
  }
}

// Every process finds no GPU (or no NCCL in the build) before any of them
// waits for the NCCL id, so all fail at once with the reason.
TEST(MpiWorldTest, NcclWithoutGpusIsAClearErrorOnEveryProcess) {
  auto world = MpiWorld::Join(1);
  try {
    world->CreateGroup("nccl", {});
    GTEST_SKIP() << "this machine has GPUs and NCCL: nothing to check here";
  } catch (const CollectiveError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("needs GPUs") != std::string::npos ||
                what.find("not in this build") != std::string::npos)
        << what;
  }
}

// Checked across processes before NCCL is touched, so no GPU is needed to
// see it: every process names the same GPU of one host.
TEST(MpiWorldTest, NcclRefusesTwoProcessesOnOneGpu) {
  auto world = MpiWorld::Join(1);
  world->SetLocalDevices({RankDevice::Gpu(0)});
  try {
    world->CreateGroup("nccl", {});
    FAIL() << "expected a CollectiveError";
  } catch (const CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "processes 0 and 1 both use cuda:0 on host " + world->host()),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--backend=ring"), std::string::npos);
  }
}

// The host backends reach GPU ranks through host staging, which needs the
// GPU: one that is not there is named on every process.
TEST(MpiWorldTest, HostBackendsOnAMissingGpuNameIt) {
  auto world = MpiWorld::Join(1);
  world->SetLocalDevices({RankDevice::Gpu(99)});
  for (const char* backend : {"ring", "mpi"}) {
    try {
      world->CreateGroup(backend, {});
      FAIL() << backend << ": expected a CollectiveError";
    } catch (const CollectiveError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("cuda:99 does not exist") != std::string::npos ||
                  what.find("has no CUDA") != std::string::npos)
          << what;
    }
  }
  EXPECT_THROW(world->SetLocalDevices({RankDevice::Host(), RankDevice::Host()}),
               std::invalid_argument);
}

TEST(MpiWorldTest, UnknownBackendSaysWhatThereIs) {
  auto world = MpiWorld::Join(1);
  EXPECT_THROW(world->CreateGroup("carrier-pigeon", {}), std::invalid_argument);
}

TEST(MpiWorldTest, SumOverProcessesAddsEveryProcess) {
  auto world = MpiWorld::Join(1);
  double values[2] = {1.0, static_cast<double>(world->process())};
  world->SumOverProcesses(values, 2);
  const int p = world->processes();
  EXPECT_EQ(values[0], p);
  EXPECT_EQ(values[1], p * (p - 1) / 2.0);
}

// Strings of different lengths (one empty) reach every process in order.
TEST(MpiWorldTest, GatherFromProcessesGivesEveryProcessEveryString) {
  auto world = MpiWorld::Join(1);
  const int me = world->process();
  const std::vector<std::string> all = world->GatherFromProcesses(
      me == 1 ? std::string() : std::string(me + 3, 'a' + me));
  ASSERT_EQ(static_cast<int>(all.size()), world->processes());
  for (int p = 0; p < world->processes(); ++p) {
    EXPECT_EQ(all[p], p == 1 ? std::string() : std::string(p + 3, 'a' + p));
  }
}

}  // namespace
}  // namespace ringlet::collectives::mpi
