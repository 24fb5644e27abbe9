// TcpWorld with processes as threads: several worlds of this test process
// meet over loopback, each believing it is one process of a launch. The
// contract every ProcessWorld keeps (collectives/testing/process_contract.h)
// runs over them; so do what only a TCP job can meet: a peer that dies (its
// connections close) or stops answering, a rendezvous that someone misses,
// two processes claiming one index, processes launched for jobs of
// different sizes, and a job whose rendezvous store (a MemoryStore, as
// etcd would) lets it outlive process 0.
#include "collectives/backends/tcp/tcp_world.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/backends/tcp/memory_store.h"
#include "collectives/testing/process_contract.h"
#include "collectives/testing/rank_threads.h"
#include "collectives/testing/tcp_processes.h"
#include "collectives/transport/tcp/socket.h"

namespace ringlet::collectives::tcp {
namespace {

using testing::Buffer;
using testing::EveryProcess;
using testing::FreePort;
using testing::Group;
using testing::JobUnderTest;
using testing::ProcessContractTest;
using testing::ProcessSetup;
using testing::RunRanks;
using testing::TestValue;
using testing::TorchrunLaunch;
using Seconds = std::chrono::duration<double>;

std::vector<std::shared_ptr<TcpWorld>> JoinAll(
    const std::vector<int>& local_ranks, const TcpWorldOptions& options = {}) {
  const int n = static_cast<int>(local_ranks.size());
  const int port = FreePort();
  std::vector<std::shared_ptr<TcpWorld>> worlds(n);
  const std::vector<std::string> errors = EveryProcess(n, [&](int p) {
    worlds[p] =
        TcpWorld::Join(TorchrunLaunch(p, n, port), local_ranks[p], options);
  });
  for (int p = 0; p < n; ++p) {
    if (!errors[p].empty()) {
      throw std::runtime_error("process " + std::to_string(p) + ": " +
                               errors[p]);
    }
  }
  return worlds;
}

// Every world's group for `backend`, made together; ranks in global order.
Group GroupOf(const std::vector<std::shared_ptr<TcpWorld>>& worlds,
              const std::string& backend,
              const CommOptions& options = CommOptions{
                  std::chrono::seconds(60)}) {
  std::vector<Group> per_world(worlds.size());
  const std::vector<std::string> errors = EveryProcess(
      static_cast<int>(worlds.size()),
      [&](int p) { per_world[p] = worlds[p]->CreateGroup(backend, options); });
  for (const std::string& e : errors) {
    if (!e.empty()) throw CollectiveError(e);
  }
  Group all;
  for (Group& g : per_world) {
    for (auto& comm : g) all.push_back(std::move(comm));
  }
  return all;
}

class ThreadedTcpJob : public JobUnderTest {
 public:
  ThreadedTcpJob(const std::string& backend, const std::vector<int>& ranks)
      : worlds_(JoinAll(ranks)), group_(GroupOf(worlds_, backend)) {}
  int size() const override { return worlds_[0]->size(); }
  Group& group() override { return group_; }
  double SumOverJob(double value) override { return value; }

 private:
  std::vector<std::shared_ptr<TcpWorld>> worlds_;
  Group group_;
};

std::vector<ProcessSetup> Setups() {
  std::vector<ProcessSetup> setups;
  struct Case {
    const char* name;
    const char* backend;
    std::vector<int> ranks;
  };
  // Two processes; three (a ring over two TCP hops and one in memory);
  // several ranks per process; processes of different sizes.
  for (const Case& c : std::vector<Case>{{"ring_2x1", "ring", {1, 1}},
                                         {"ring_2x2", "ring", {2, 2}},
                                         {"ring_3x1", "ring", {1, 1, 1}},
                                         {"ring_1_2_1", "ring", {1, 2, 1}},
                                         {"naive_2x1", "naive", {1, 1}},
                                         {"naive_2x2", "naive", {2, 2}}}) {
    setups.push_back(
        {c.name,
         [c] { return std::make_unique<ThreadedTcpJob>(c.backend, c.ranks); }});
  }
  return setups;
}

INSTANTIATE_TEST_SUITE_P(Tcp, ProcessContractTest,
                         ::testing::ValuesIn(Setups()),
                         testing::ProcessSetupName);

TEST(TcpWorldTest, LayoutFollowsProcessOrder) {
  const auto worlds = JoinAll({2, 1, 3});
  const int first[] = {0, 2, 3};
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(worlds[p]->process(), p);
    EXPECT_EQ(worlds[p]->processes(), 3);
    EXPECT_EQ(worlds[p]->size(), 6);
    EXPECT_EQ(worlds[p]->first_rank(), first[p]);
    EXPECT_EQ(worlds[p]->ProcessOf(5), 2);
    EXPECT_EQ(worlds[p]->ProcessOf(2), 1);
    EXPECT_NE(worlds[p]->RankName(4).find("rank 4 (process 2, host "),
              std::string::npos);
  }
}

TEST(TcpWorldTest, JobCollectivesReachEveryProcess) {
  const auto worlds = JoinAll({1, 1, 1});
  std::vector<std::vector<std::string>> gathered(3);
  std::vector<double> sums(3 * 2);
  std::vector<uint64_t> ids(3);
  const std::vector<std::string> errors = EveryProcess(3, [&](int p) {
    // Strings of different lengths, one empty.
    gathered[p] = worlds[p]->GatherFromProcesses(
        p == 1 ? std::string() : std::string(p + 3, 'a' + p));
    double values[2] = {1.0, static_cast<double>(p)};
    worlds[p]->SumOverProcesses(values, 2);
    sums[2 * p] = values[0];
    sums[2 * p + 1] = values[1];
    uint64_t id = p == 0 ? 0x0123456789abcdefu : 0;
    worlds[p]->BroadcastBytes(&id, sizeof(id));
    ids[p] = id;
  });
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(errors[p], "");
    ASSERT_EQ(gathered[p].size(), 3u);
    for (int q = 0; q < 3; ++q) {
      EXPECT_EQ(gathered[p][q],
                q == 1 ? std::string() : std::string(q + 3, 'a' + q));
    }
    EXPECT_EQ(sums[2 * p], 3.0);
    EXPECT_EQ(sums[2 * p + 1], 3.0);
    EXPECT_EQ(ids[p], 0x0123456789abcdefu);
  }
}

// Several groups, made one after another, each on connections of its own:
// a group's messages never reach another's ranks.
TEST(TcpWorldTest, GroupsMadeInTurnKeepTheirOwnMessages) {
  const auto worlds = JoinAll({1, 2});
  Group first = GroupOf(worlds, "ring");
  Group second = GroupOf(worlds, "naive");
  const std::vector<std::string> errors = RunRanks(first, [&](Communicator& a) {
    Communicator& b = *second[a.rank()];
    Buffer x(DataType::kFloat32, 4099), y(DataType::kFloat32, 4099);
    for (size_t i = 0; i < 4099; ++i) {
      x.Set(i, TestValue(a.rank(), i));
      y.Set(i, 2 * TestValue(a.rank(), i));
    }
    a.AllReduce(x.data(), x.data(), 4099, DataType::kFloat32, ReduceOp::kSum);
    b.AllReduce(y.data(), y.data(), 4099, DataType::kFloat32, ReduceOp::kSum);
    for (size_t i = 0; i < 4099; ++i) {
      double sum = 0;
      for (int r = 0; r < 3; ++r) sum += TestValue(r, i);
      ASSERT_EQ(x.Get(i), sum) << "rank " << a.rank() << " element " << i;
      ASSERT_EQ(y.Get(i), 2 * sum) << "rank " << a.rank() << " element " << i;
    }
  });
  for (const std::string& e : errors) EXPECT_EQ(e, "");
}

// A rank whose process is gone (here: its communicator destroyed, which
// closes its connections as a process's death does) is named by the
// others at once, not at their 60 s deadline.
TEST(TcpWorldTest, APeerWhoseConnectionsCloseIsNamedAtOnce) {
  const auto worlds = JoinAll({1, 1, 1});
  Group group = GroupOf(worlds, "ring");
  const auto start = Clock::now();
  const std::vector<std::string> errors = RunRanks(group, [&](Communicator& c) {
    if (c.rank() == 2) {
      group[2].reset();  // Gone, mid-job.
      return;
    }
    Buffer data(DataType::kFloat32, 262147);
    c.AllReduce(data.data(), data.data(), 262147, DataType::kFloat32,
                ReduceOp::kSum);
  });
  const double seconds = Seconds(Clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  bool named = false;
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(errors[r], "") << "rank " << r << " did not fail";
    named |= errors[r].find("rank 2 (process 2, host ") != std::string::npos &&
             errors[r].find("closed its connection") != std::string::npos;
  }
  EXPECT_TRUE(named) << errors[0] << "\n" << errors[1];
}

// A rank that stops answering (SIGSTOP, a hung host) fails the others at
// their deadline, naming it, and nothing hangs.
TEST(TcpWorldTest, APeerThatStopsAnsweringIsNamedAtTheDeadline) {
  const auto worlds = JoinAll({1, 1});
  Group group = GroupOf(worlds, "ring");
  CallOptions options;
  options.timeout = std::chrono::milliseconds(500);
  const auto start = Clock::now();
  const std::vector<std::string> errors = RunRanks(group, [&](Communicator& c) {
    if (c.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      return;
    }
    Buffer data(DataType::kFloat32, 61);
    c.AllReduce(data.data(), data.data(), 61, DataType::kFloat32,
                ReduceOp::kSum, options);
  });
  const double seconds = Seconds(Clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  EXPECT_NE(errors[0].find("rank 1 (process 1, host "), std::string::npos)
      << errors[0];
  EXPECT_NE(errors[0].find("after 500 ms"), std::string::npos) << errors[0];
}

// A process that stops (SIGSTOP: here its heartbeats paused and its rank
// silent) is named by the others once the heartbeat timeout passes, long
// before the call's own deadline; process 0 tells the third process who.
TEST(TcpWorldTest, AStoppedProcessIsNamedWithinTheHeartbeatTimeout) {
  TcpWorldOptions options;
  options.heartbeat_timeout = std::chrono::milliseconds(600);
  const auto worlds = JoinAll({1, 1, 1}, options);
  Group group = GroupOf(worlds, "ring");
  worlds[1]->PauseHeartbeatsForTest();
  const auto start = Clock::now();
  double seconds[3] = {0, 0, 0};
  const std::vector<std::string> errors = RunRanks(group, [&](Communicator& c) {
    if (c.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      return;
    }
    Buffer data(DataType::kFloat32, 4099);
    try {
      c.AllReduce(data.data(), data.data(), 4099, DataType::kFloat32,
                  ReduceOp::kSum);  // 60 s deadline.
    } catch (...) {
      seconds[c.rank()] = Seconds(Clock::now() - start).count();
      throw;
    }
  });
  for (int r : {0, 2}) {
    EXPECT_GT(seconds[r], 0.5) << "rank " << r;
    EXPECT_LT(seconds[r], 2.0) << "rank " << r;
    EXPECT_NE(errors[r].find("process 1 (host "), std::string::npos)
        << "rank " << r << ": " << errors[r];
    EXPECT_NE(errors[r].find("stopped answering"), std::string::npos)
        << "rank " << r << ": " << errors[r];
  }
  EXPECT_TRUE(worlds[0]->health().failed());
  EXPECT_TRUE(worlds[2]->health().failed());
}

// The job's own collectives end as soon too.
TEST(TcpWorldTest, AStoppedProcessEndsTheJobsCollectivesToo) {
  TcpWorldOptions options;
  options.heartbeat_timeout = std::chrono::milliseconds(600);
  const auto worlds = JoinAll({1, 1}, options);
  worlds[0]->PauseHeartbeatsForTest();
  const auto start = Clock::now();
  std::string error;
  try {
    double value = 1;
    worlds[1]->SumOverProcesses(&value, 1);  // Process 0 never comes.
  } catch (const CollectiveError& e) {
    error = e.what();
  }
  EXPECT_LT(Seconds(Clock::now() - start).count(), 2.0);
  EXPECT_NE(error.find("process 0 (host "), std::string::npos) << error;
  EXPECT_NE(error.find("stopped answering"), std::string::npos) << error;
}

// Waits until `world` knows its job failed (up to 5 s); false if never.
bool FailedSoon(const TcpWorld& world) {
  const auto until = Clock::now() + std::chrono::seconds(5);
  while (!world.health().failed() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return world.health().failed();
}

// The survivors among `worlds` (by index) regroup, each on a thread of its
// own; their new worlds, in the survivors' order.
std::vector<std::shared_ptr<TcpWorld>> Regroup(
    std::vector<std::shared_ptr<TcpWorld>>& worlds,
    const std::vector<int>& survivors) {
  const int n = static_cast<int>(survivors.size());
  std::vector<std::shared_ptr<TcpWorld>> regrouped(n);
  const std::vector<std::string> errors = EveryProcess(n, [&](int i) {
    TcpWorld& old = *worlds[survivors[i]];
    const std::string why_not = old.WhyNoRegroup();
    if (!why_not.empty()) throw CollectiveError(why_not);
    regrouped[i] = TcpWorld::Regroup(old, old.local_ranks());
  });
  for (int i = 0; i < n; ++i) {
    if (!errors[i].empty()) {
      throw std::runtime_error("survivor " + std::to_string(survivors[i]) +
                               ": " + errors[i]);
    }
  }
  return regrouped;
}

// Every rank of `worlds` sums rank + 1 over a ring group of theirs.
void ExpectRingSums(const std::vector<std::shared_ptr<TcpWorld>>& worlds) {
  Group group = GroupOf(worlds, "ring");
  const int size = worlds[0]->size();
  const std::vector<std::string> errors = RunRanks(group, [&](Communicator& c) {
    std::vector<float> data(1000, static_cast<float>(c.rank() + 1));
    c.AllReduce(data.data(), data.data(), data.size(), DataType::kFloat32,
                ReduceOp::kSum);
    for (float v : data) {
      if (v != size * (size + 1) / 2) {
        throw std::runtime_error("rank " + std::to_string(c.rank()) +
                                 " summed " + std::to_string(v));
      }
    }
  });
  for (const std::string& e : errors) EXPECT_EQ(e, "");
}

// A process dies (its connections close): the others regroup without it,
// renumbered in their old order, and sum over their new ranks.
TEST(TcpWorldTest, TheSurvivorsOfADeadProcessRegroupWithoutIt) {
  auto worlds = JoinAll({1, 2, 1});
  worlds[1].reset();  // As SIGKILL closes its connections.
  ASSERT_TRUE(FailedSoon(*worlds[0]));
  ASSERT_TRUE(FailedSoon(*worlds[2]));
  const auto start = Clock::now();
  const auto regrouped = Regroup(worlds, {0, 2});
  EXPECT_LT(Seconds(Clock::now() - start).count(), 2.0);
  EXPECT_EQ(worlds[0]->health().lost_process(), 1);
  EXPECT_EQ(worlds[2]->health().lost_process(), 1);
  ASSERT_EQ(regrouped.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(regrouped[i]->process(), i);
    EXPECT_EQ(regrouped[i]->processes(), 2);
    EXPECT_EQ(regrouped[i]->size(), 2);
    EXPECT_EQ(regrouped[i]->generation(), 1u);
    EXPECT_FALSE(regrouped[i]->health().failed());
  }
  ExpectRingSums(regrouped);
}

// A process that stops answering is left out once the heartbeats time out.
TEST(TcpWorldTest, AStoppedProcessIsLeftOutOfTheRegroup) {
  TcpWorldOptions options;
  options.heartbeat_timeout = std::chrono::milliseconds(500);
  auto worlds = JoinAll({1, 1, 1}, options);
  worlds[1]->PauseHeartbeatsForTest();
  ASSERT_TRUE(FailedSoon(*worlds[0]));
  const auto regrouped = Regroup(worlds, {0, 2});
  EXPECT_EQ(regrouped[1]->process(), 1);
  EXPECT_EQ(regrouped[1]->size(), 2);
  EXPECT_NE(worlds[2]->health().reason().find("process 1 (host "),
            std::string::npos)
      << worlds[2]->health().reason();
  ExpectRingSums(regrouped);
}

// A job regroups as often as it loses processes; one that dies while the
// others gather is left out too, down to process 0 alone.
TEST(TcpWorldTest, AJobRegroupsAgainAndDownToOneProcess) {
  auto worlds = JoinAll({1, 1, 1, 1});
  worlds[3].reset();
  auto second = Regroup(worlds, {0, 1, 2});
  ExpectRingSums(second);
  second[1].reset();  // Old process 1.
  auto third = Regroup(second, {0, 2});
  EXPECT_EQ(third[1]->generation(), 2u);
  EXPECT_EQ(third[1]->host(), worlds[2]->host());
  ExpectRingSums(third);
  // Process 1 of this membership dies after the failure, before it
  // regroups: process 0 goes on alone.
  third[1]->PauseHeartbeatsForTest();
  third[1].reset();
  auto alone = Regroup(third, {0});
  EXPECT_EQ(alone[0]->processes(), 1);
  EXPECT_EQ(alone[0]->size(), 1);
}

// Every process of `worlds` asks at each "step boundary" whether a joiner
// waits, as the trainers do, until all see one (within 5 s); they must
// agree at every step.
::testing::AssertionResult AJoinerIsSeen(
    const std::vector<std::shared_ptr<TcpWorld>>& worlds) {
  const int n = static_cast<int>(worlds.size());
  for (int step = 0; step < 500; ++step) {
    std::vector<char> waiting(n, 0);
    const std::vector<std::string> errors = EveryProcess(
        n, [&](int p) { waiting[p] = worlds[p]->JoinersWaiting(); });
    for (int p = 0; p < n; ++p) {
      if (!errors[p].empty()) {
        return ::testing::AssertionFailure()
               << "process " << p << ": " << errors[p];
      }
      if (waiting[p] != waiting[0]) {
        return ::testing::AssertionFailure()
               << "processes 0 and " << p << " disagree at step " << step;
      }
    }
    if (waiting[0]) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ::testing::AssertionFailure() << "no joiner seen within 5 s";
}

// A process started later, with the launch's environment, waits at the
// rendezvous; the job sees it between its steps and takes it in.
TEST(TcpWorldTest, AProcessStartedLaterJoinsAtTheNextRegroup) {
  const int port = FreePort();
  std::vector<std::shared_ptr<TcpWorld>> worlds(2);
  const std::vector<std::string> errors = EveryProcess(2, [&](int p) {
    worlds[p] = TcpWorld::Join(TorchrunLaunch(p, 2, port), 1);
  });
  ASSERT_EQ(errors[0] + errors[1], "");
  bool before[2] = {true, true};
  EveryProcess(2, [&](int p) { before[p] = worlds[p]->JoinersWaiting(); });
  EXPECT_FALSE(before[0] || before[1]);
  auto joiner = std::async(std::launch::async, [&] {
    return TcpWorld::Join(TorchrunLaunch(2, 2, port), 2);
  });
  ASSERT_TRUE(AJoinerIsSeen(worlds));
  std::vector<std::shared_ptr<TcpWorld>> regrouped = Regroup(worlds, {0, 1});
  regrouped.push_back(joiner.get());
  EXPECT_TRUE(regrouped[2]->JoinedRunningJob());
  EXPECT_FALSE(regrouped[1]->JoinedRunningJob());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(regrouped[i]->process(), i);
    EXPECT_EQ(regrouped[i]->processes(), 3);
    EXPECT_EQ(regrouped[i]->size(), 4);
    EXPECT_EQ(regrouped[i]->generation(), 1u);
  }
  ExpectRingSums(regrouped);
}

// Process 0 hosts the rendezvous: without it nobody regroups, and the
// reason says so.
TEST(TcpWorldTest, WithoutProcessZeroNobodyRegroupsAndTheReasonSaysWhy) {
  auto worlds = JoinAll({1, 1});
  worlds[0].reset();
  ASSERT_TRUE(FailedSoon(*worlds[1]));
  const std::string why_not = worlds[1]->WhyNoRegroup();
  EXPECT_NE(why_not.find("process 0 (host "), std::string::npos) << why_not;
  EXPECT_NE(why_not.find("hosts the job's rendezvous"), std::string::npos)
      << why_not;
  EXPECT_NE(why_not.find("RINGLET_RENDEZVOUS_STORE=etcd://"), std::string::npos)
      << why_not;
}

TcpWorldOptions WithStore(std::shared_ptr<RendezvousStore> store,
                          std::chrono::milliseconds heartbeat_timeout =
                              std::chrono::milliseconds(3000)) {
  TcpWorldOptions options;
  options.store = std::move(store);
  options.heartbeat_timeout = heartbeat_timeout;
  return options;
}

// `worlds` ordered by their process index, as GroupOf wants them.
std::vector<std::shared_ptr<TcpWorld>> ByProcess(
    std::vector<std::shared_ptr<TcpWorld>> worlds) {
  std::sort(worlds.begin(), worlds.end(), [](const auto& a, const auto& b) {
    return a->process() < b->process();
  });
  return worlds;
}

// The one value in `store` whose key ends with `suffix`; "" if none.
std::string ValueEndingWith(MemoryStore& store, const std::string& suffix) {
  std::string found;
  for (const auto& [key, value] : store.List("/ringlet/")) {
    if (key.size() >= suffix.size() &&
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0) {
      EXPECT_EQ(found, "") << "two keys end with " << suffix;
      found = value;
    }
  }
  return found;
}

// With a store, process 0's survivors regroup under whichever of them the
// store let claim the regroup first; the others follow in their old order.
// The new host's loss is survived the same way.
TEST(TcpWorldTest, WithAStoreTheSurvivorsOfProcessZeroRegroupUnderANewHost) {
  const auto store = std::make_shared<MemoryStore>();
  auto worlds = JoinAll({2, 1, 1, 1}, WithStore(store));
  EXPECT_EQ(ValueEndingWith(*store, "/rendezvous").rfind("127.0.0.1 ", 0), 0u);
  worlds[0].reset();  // As SIGKILL closes its connections.
  for (int p = 1; p < 4; ++p) ASSERT_TRUE(FailedSoon(*worlds[p]));
  EXPECT_EQ(worlds[1]->WhyNoRegroup(), "");
  const std::vector<int> survivors = {1, 2, 3};
  const auto start = Clock::now();
  auto regrouped = Regroup(worlds, survivors);
  EXPECT_LT(Seconds(Clock::now() - start).count(), 2.0);
  const std::string claim = ValueEndingWith(*store, "/g1/host");
  ASSERT_NE(claim, "");
  const int host = std::stoi(claim);
  int next = 1;
  for (size_t i = 0; i < survivors.size(); ++i) {
    const TcpWorld& w = *regrouped[i];
    EXPECT_EQ(w.process(), survivors[i] == host ? 0 : next++)
        << "old process " << survivors[i] << ", host " << host;
    EXPECT_EQ(w.processes(), 3);
    EXPECT_EQ(w.size(), 3);
    EXPECT_EQ(w.generation(), 1u);
    EXPECT_FALSE(w.health().failed());
  }
  // A process started later finds the new host where the store says.
  EXPECT_EQ(ValueEndingWith(*store, "/rendezvous"),
            "127.0.0.1 " + claim.substr(claim.find(' ') + 1));
  auto second = ByProcess(std::move(regrouped));
  ExpectRingSums(second);

  second[0].reset();  // The new host is lost too.
  ASSERT_TRUE(FailedSoon(*second[1]));
  ASSERT_TRUE(FailedSoon(*second[2]));
  const auto third = ByProcess(Regroup(second, {1, 2}));
  EXPECT_EQ(third[0]->generation(), 2u);
  EXPECT_EQ(third[1]->processes(), 2);
  ExpectRingSums(third);
}

// Process 0 stops (SIGSTOP): the others evict it at the heartbeat timeout
// and go on with a new host.
TEST(TcpWorldTest, WithAStoreAStoppedProcessZeroIsLeftBehind) {
  const auto store = std::make_shared<MemoryStore>();
  auto worlds =
      JoinAll({1, 1, 1}, WithStore(store, std::chrono::milliseconds(500)));
  worlds[0]->PauseHeartbeatsForTest();
  ASSERT_TRUE(FailedSoon(*worlds[1]));
  ASSERT_TRUE(FailedSoon(*worlds[2]));
  EXPECT_NE(worlds[1]->health().reason().find("process 0 (host "),
            std::string::npos)
      << worlds[1]->health().reason();
  const auto regrouped = ByProcess(Regroup(worlds, {1, 2}));
  EXPECT_EQ(regrouped[0]->processes(), 2);
  ExpectRingSums(regrouped);
}

// With a store, the store names the host of every regroup, also when the
// lost process is not process 0: process 0 claims it, the others follow.
TEST(TcpWorldTest, WithAStoreTheStoreNamesTheHostOfEveryRegroup) {
  const auto store = std::make_shared<MemoryStore>();
  auto worlds = JoinAll({1, 1, 1}, WithStore(store));
  worlds[2].reset();
  ASSERT_TRUE(FailedSoon(*worlds[0]));
  ASSERT_TRUE(FailedSoon(*worlds[1]));
  const auto regrouped = ByProcess(Regroup(worlds, {0, 1}));
  EXPECT_EQ(ValueEndingWith(*store, "/g1/host").rfind("0 ", 0), 0u);
  EXPECT_EQ(regrouped[0]->processes(), 2);
  ExpectRingSums(regrouped);
}

// Process 0 stopped (SIGSTOP) and woken after the others went on under a
// new host: it finds that host named in the store and asks to join there,
// where it is turned away; it never goes on as a job of its own beside
// theirs (two jobs, one set of outputs).
TEST(TcpWorldTest, WithAStoreAProcessZeroLeftBehindFormsNoJobOfItsOwn) {
  const auto store = std::make_shared<MemoryStore>();
  TcpWorldOptions options = WithStore(store, std::chrono::milliseconds(500));
  options.timeout = std::chrono::seconds(20);
  auto worlds = JoinAll({1, 1, 1}, options);
  worlds[0]->PauseHeartbeatsForTest();
  ASSERT_TRUE(FailedSoon(*worlds[1]));
  ASSERT_TRUE(FailedSoon(*worlds[2]));
  auto went_on = ByProcess(Regroup(worlds, {1, 2}));
  worlds[0]->ResumeHeartbeatsForTest();
  ASSERT_TRUE(FailedSoon(*worlds[0]));
  auto left_behind = std::async(std::launch::async, [&] {
    std::vector<std::shared_ptr<TcpWorld>> alone;
    try {
      alone = Regroup(worlds, {0});
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return "went on as a job of " + std::to_string(alone[0]->processes()) +
           " process(es)";
  });
  // The job that went on sees it knock, regroups and turns it away.
  ASSERT_TRUE(AJoinerIsSeen(went_on));
  const auto third = ByProcess(Regroup(went_on, {0, 1}));
  EXPECT_EQ(third[0]->processes(), 2);
  const std::string outcome = left_behind.get();
  EXPECT_NE(outcome.find("cannot rejoin"), std::string::npos) << outcome;
  ExpectRingSums(third);
}

// Process 0 and another die together: the survivor waits for those the
// store heard from (none here), not until its deadline, and goes on alone.
TEST(TcpWorldTest, WithAStoreProcessZeroAndAnotherLostLeaveTheRestToGoOn) {
  const auto store = std::make_shared<MemoryStore>();
  TcpWorldOptions options = WithStore(store, std::chrono::milliseconds(500));
  options.timeout = std::chrono::seconds(60);
  auto worlds = JoinAll({1, 1, 1}, options);
  worlds[0].reset();
  worlds[2].reset();
  ASSERT_TRUE(FailedSoon(*worlds[1]));
  const auto start = Clock::now();
  const auto alone = Regroup(worlds, {1});
  // At most the wait for a survivor that said it was alive and died.
  EXPECT_LT(Seconds(Clock::now() - start).count(), 10.0);
  EXPECT_EQ(alone[0]->process(), 0);
  EXPECT_EQ(alone[0]->processes(), 1);
}

// Process 0 started again after the job went on without it: it finds the
// new host through the store and joins at the next step boundary.
TEST(TcpWorldTest, WithAStoreARestartedProcessZeroJoinsTheJobThatWentOn) {
  const auto store = std::make_shared<MemoryStore>();
  const int port = FreePort();
  std::vector<std::shared_ptr<TcpWorld>> worlds(3);
  ASSERT_EQ(EveryProcess(3,
                         [&](int p) {
                           worlds[p] = TcpWorld::Join(
                               TorchrunLaunch(p, 3, port), 1, WithStore(store));
                         }),
            std::vector<std::string>(3));
  worlds[0].reset();
  ASSERT_TRUE(FailedSoon(*worlds[1]));
  ASSERT_TRUE(FailedSoon(*worlds[2]));
  auto regrouped = ByProcess(Regroup(worlds, {1, 2}));
  auto joiner = std::async(std::launch::async, [&] {
    return TcpWorld::Join(TorchrunLaunch(0, 3, port), 2, WithStore(store));
  });
  ASSERT_TRUE(AJoinerIsSeen(regrouped));
  std::vector<std::shared_ptr<TcpWorld>> third = Regroup(regrouped, {0, 1});
  third.push_back(joiner.get());
  EXPECT_TRUE(third[2]->JoinedRunningJob());
  EXPECT_EQ(third[2]->process(), 2);
  EXPECT_EQ(third[2]->generation(), 2u);
  EXPECT_EQ(third[2]->size(), 4);
  ExpectRingSums(third);
}

// Processes given different stores would elect different hosts: refused.
TEST(TcpWorldTest, ProcessesWithDifferentStoresAreRefused) {
  const int port = FreePort();
  const auto store = std::make_shared<MemoryStore>();
  const std::vector<std::string> errors = EveryProcess(2, [&](int p) {
    TcpWorld::Join(TorchrunLaunch(p, 2, port), 1,
                   p == 0 ? WithStore(store) : TcpWorldOptions{});
  });
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("give every process the same RINGLET_RENDEZVOUS_STORE"),
              std::string::npos)
        << e;
  }
}

TEST(TcpWorldTest, ARendezvousSomeoneMissesNamesWhoAtTheDeadline) {
  const int port = FreePort();
  TcpWorldOptions options;
  options.timeout = std::chrono::milliseconds(800);
  const auto start = Clock::now();
  // Processes 0 and 2 of 4 come; 1 and 3 never do.
  const std::vector<std::string> errors = EveryProcess(2, [&](int i) {
    TcpWorld::Join(TorchrunLaunch(i * 2, 4, port), 1, options);
  });
  EXPECT_LT(Seconds(Clock::now() - start).count(), 5.0);
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("processes 1, 3 of 4 never connected"), std::string::npos)
        << e;
  }
}

TEST(TcpWorldTest, TwoProcessesClaimingOneIndexAreRefused) {
  const int port = FreePort();
  TcpWorldOptions options;
  options.timeout = std::chrono::seconds(10);
  const std::vector<std::string> errors = EveryProcess(3, [&](int i) {
    TcpWorld::Join(TorchrunLaunch(i == 0 ? 0 : 1, 3, port), 1, options);
  });
  // Process 0 tells both claimants why, and fails itself.
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("two processes say they are process 1"), std::string::npos)
        << e;
  }
}

TEST(TcpWorldTest, ProcessesOfDifferentJobSizesAreRefused) {
  const int port = FreePort();
  const std::vector<std::string> errors = EveryProcess(2, [&](int i) {
    TcpWorld::Join(TorchrunLaunch(i, i == 0 ? 2 : 3, port), 1);
  });
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("process 1 (host "), std::string::npos) << e;
    EXPECT_NE(e.find("was launched for a job of 3 processes, process 0 for 2"),
              std::string::npos)
        << e;
  }
}

TEST(TcpWorldTest, NobodyAtTheMasterAddressIsAnErrorByTheDeadline) {
  TcpWorldOptions options;
  options.timeout = std::chrono::milliseconds(500);
  const int port = FreePort();
  try {
    TcpWorld::Join(TorchrunLaunch(1, 2, port), 1, options);
    FAIL() << "expected a CollectiveError";
  } catch (const CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("nobody answered at 127.0.0.1:" +
                                         std::to_string(port)),
              std::string::npos)
        << e.what();
  }
}

TEST(TcpWorldTest, MpiBackendSaysItNeedsMpirun) {
  const auto worlds = JoinAll({1, 1});
  const std::vector<std::string> errors =
      EveryProcess(2, [&](int p) { worlds[p]->CreateGroup("mpi", {}); });
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("needs processes started by mpirun"), std::string::npos)
        << e;
  }
}

}  // namespace
}  // namespace ringlet::collectives::tcp
