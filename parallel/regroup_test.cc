// The regroup protocol over TcpWorld with processes as threads (each a
// world of this test process over loopback): the living agree on the last
// step every one of them finished, whichever of its two kept steps that is
// for each; a joiner receives process 0's bytes of it; with no step
// finished they start from the beginning; a process that holds neither
// kept step says so.
#include "parallel/regroup.h"

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/backends/tcp/tcp_world.h"
#include "collectives/testing/tcp_processes.h"
#include "gtest/gtest.h"

namespace ringlet::parallel {
namespace {

using collectives::tcp::TcpWorld;
using collectives::testing::EveryProcess;
using collectives::testing::FreePort;
using collectives::testing::TorchrunLaunch;
using Worlds = std::vector<std::shared_ptr<collectives::ProcessWorld>>;

Worlds JoinAll(int n, int port) {
  Worlds worlds(n);
  const std::vector<std::string> errors = EveryProcess(n, [&](int p) {
    worlds[p] = TcpWorld::Join(TorchrunLaunch(p, n, port), 1);
  });
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  return worlds;
}

// Kills process `lost` of `worlds` (its connections close, as SIGKILL's)
// and waits until the others' heartbeats know.
void Lose(Worlds& worlds, int lost) {
  worlds[lost].reset();
  for (size_t p = 0; p < worlds.size(); ++p) {
    if (worlds[p] == nullptr) continue;
    auto& world = static_cast<TcpWorld&>(*worlds[p]);
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!world.health().failed() &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(world.health().failed()) << "process " << p;
  }
}

const collectives::CollectiveError kLost("process 2 was lost");

std::string Encoded(StepMark m, int kept) {
  return "state " + std::to_string(m.epoch) + "/" + std::to_string(m.steps) +
         " kept " + std::to_string(kept);
}

TEST(RegroupTest, TheLivingAgreeOnTheLastStepEveryOneFinished) {
  Worlds worlds = JoinAll(3, FreePort());
  Lose(worlds, 2);
  // Process 0 finished a step more than process 1.
  const StepMark newest[2] = {{1, 5}, {1, 4}};
  const StepMark before[2] = {{1, 4}, {1, 3}};
  std::vector<Regrouped> r(2);
  const std::vector<std::string> errors = EveryProcess(2, [&](int p) {
    r[p] = RegroupLiving(*worlds[p], "regroup_test", kLost, 1, newest[p],
                         before[p], [](int) -> std::string {
                           ADD_FAILURE() << "no joiner needs the state";
                           return "";
                         });
  });
  ASSERT_EQ(errors[0] + errors[1], "");
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(r[p].agreed.epoch, 1);
    EXPECT_EQ(r[p].agreed.steps, 4);
    EXPECT_EQ(r[p].world->processes(), 2);
    EXPECT_EQ(r[p].world->process(), p);
  }
  EXPECT_EQ(r[0].kept, 1);  // Its step before the newest.
  EXPECT_EQ(r[1].kept, 0);
  EXPECT_NE(r[0].record.find("\"processes\":2,\"processes_before\":3"),
            std::string::npos)
      << r[0].record;
  EXPECT_NE(r[0].record.find("\"steps_recomputed\":1"), std::string::npos)
      << r[0].record;
  EXPECT_NE(r[1].record.find("\"steps_recomputed\":0"), std::string::npos)
      << r[1].record;
  EXPECT_NE(r[0].record.find("\"reason\":\"process 2 was lost\""),
            std::string::npos)
      << r[0].record;
}

TEST(RegroupTest, WithNoStepFinishedTheJobStartsFromTheBeginning) {
  Worlds worlds = JoinAll(3, FreePort());
  Lose(worlds, 1);
  std::vector<Regrouped> r(3);
  const std::vector<std::string> errors = EveryProcess(3, [&](int p) {
    if (p == 1) return;
    r[p] = RegroupLiving(*worlds[p], "regroup_test", kLost, 1, StepMark{},
                         StepMark{}, [](int) { return std::string(); });
  });
  ASSERT_EQ(errors[0] + errors[2], "");
  for (int p : {0, 2}) {
    EXPECT_EQ(r[p].agreed.epoch, 0);
    EXPECT_EQ(r[p].agreed.steps, 0);
    EXPECT_EQ(r[p].kept, -1);
  }
}

TEST(RegroupTest, AProcessHoldingNeitherKeptStepSaysSo) {
  Worlds worlds = JoinAll(3, FreePort());
  Lose(worlds, 2);
  // Process 0 ran two steps past process 1: no process gets so far ahead,
  // so one that does is a bug named, not a silent wrong state.
  const StepMark newest[2] = {{1, 9}, {1, 5}};
  const StepMark before[2] = {{1, 8}, {1, 4}};
  const std::vector<std::string> errors = EveryProcess(2, [&](int p) {
    RegroupLiving(*worlds[p], "regroup_test", kLost, 1, newest[p], before[p],
                  [](int) { return std::string(); });
  });
  EXPECT_NE(errors[0].find("does not hold epoch 1, step 5"), std::string::npos)
      << errors[0];
  EXPECT_EQ(errors[1], "");
}

TEST(RegroupTest, AJoinerReceivesProcessZerosStateOfTheAgreedStep) {
  const int port = FreePort();
  Worlds worlds = JoinAll(2, port);
  auto joiner = std::async(std::launch::async, [&] {
    return std::shared_ptr<collectives::ProcessWorld>(
        TcpWorld::Join(TorchrunLaunch(2, 2, port), 1));
  });
  // Between steps every process asks, until the joiner is seen.
  bool seen = false;
  for (int i = 0; i < 500 && !seen; ++i) {
    std::vector<char> waiting(2, 0);
    EveryProcess(2, [&](int p) { waiting[p] = worlds[p]->JoinersWaiting(); });
    ASSERT_EQ(waiting[0], waiting[1]);
    seen = waiting[0];
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(seen);
  const MembershipChange change("a process started later asks to join");
  const StepMark newest[2] = {{2, 7}, {2, 7}};
  const StepMark before[2] = {{2, 6}, {2, 6}};
  std::vector<Regrouped> r(2);
  JoinedJob joined;
  const std::vector<std::string> errors = EveryProcess(3, [&](int p) {
    if (p == 2) {
      std::shared_ptr<collectives::ProcessWorld> world = joiner.get();
      ASSERT_TRUE(world->JoinedRunningJob());
      joined = JoinRunning(*world, "regroup_test", 1);
      return;
    }
    r[p] = RegroupLiving(*worlds[p], "regroup_test", change, 1, newest[p],
                         before[p], [&](int kept) {
                           EXPECT_EQ(p, 0) << "only process 0 sends";
                           return Encoded(newest[p], kept);
                         });
  });
  ASSERT_EQ(errors[0] + errors[1] + errors[2], "");
  EXPECT_EQ(r[0].world->processes(), 3);
  EXPECT_EQ(r[0].kept, 0);
  EXPECT_EQ(joined.agreed.epoch, 2);
  EXPECT_EQ(joined.agreed.steps, 7);
  EXPECT_EQ(joined.state, Encoded({2, 7}, 0));
  EXPECT_NE(joined.record.find("\"joined\":2"), std::string::npos)
      << joined.record;
}

}  // namespace
}  // namespace ringlet::parallel
