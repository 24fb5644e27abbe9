// Bad input and faults: every case ends in a CollectiveError on every rank
// that names the rank, the operation and the sizes, within seconds, for
// each host backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "collectives/collectives.h"
#include "collectives/testing/rank_threads.h"

namespace ringlet::collectives {
namespace {

using ::testing::AllOf;
using testing::Group;
using ::testing::HasSubstr;
using testing::RunRanks;
using Ms = std::chrono::milliseconds;

class FaultsTest : public ::testing::TestWithParam<std::string> {
 protected:
  Group Make(int n, Ms timeout = Ms(10000)) {
    return CreateGroup(GetParam(), n, CommOptions{timeout});
  }
  // Runs body on every rank and returns the errors, checking that the run
  // took less than `limit` (the fault must be caught, not waited out).
  std::vector<std::string> RunQuickly(
      Group& group, const std::function<void(Communicator&)>& body,
      Ms limit = Ms(3000)) {
    const auto start = std::chrono::steady_clock::now();
    auto errors = RunRanks(group, body);
    EXPECT_LT(std::chrono::steady_clock::now() - start, limit);
    return errors;
  }
};

std::vector<float> Floats(size_t n) { return std::vector<float>(n, 1.0f); }

TEST_P(FaultsTest, CountMismatchIsCaughtOnTheFirstMessage) {
  Group group = Make(2);
  const auto errors = RunQuickly(group, [](Communicator& comm) {
    const size_t count = comm.rank() == 1 ? 61706 : 61696;
    std::vector<float> buf = Floats(count);
    comm.AllReduce(buf.data(), buf.data(), count, DataType::kFloat32,
                   ReduceOp::kSum);
  });
  for (const std::string& e : errors) {
    EXPECT_THAT(e, AllOf(HasSubstr("allreduce #0 float32[61706] sum"),
                         HasSubstr("does not match"),
                         HasSubstr("allreduce #0 float32[61696] sum")));
    EXPECT_THAT(e, AllOf(HasSubstr("rank 0"), HasSubstr("rank 1")));
  }
}

// Three ranks, one calling with another count: ranks 0 and 2 agree with
// each other, so one of them may be reading the other's buffer when the
// mismatch from rank 1 ends the call; each rank's buffer is freed as soon
// as its call throws. No rank may read a buffer its owner has freed
// (AddressSanitizer and a large, unmapped-on-free buffer catch it).
TEST_P(FaultsTest, AMismatchAmongThreeRanksReadsNoFreedBuffer) {
  for (int round = 0; round < 60; ++round) {
    Group group = Make(3);
    const auto errors = RunQuickly(group, [](Communicator& comm) {
      const size_t count = comm.rank() == 1 ? (1 << 20) - 16 : (1 << 20);
      std::vector<float> buf = Floats(count);
      comm.AllReduce(buf.data(), buf.data(), count, DataType::kFloat32,
                     ReduceOp::kSum);
    });
    for (const std::string& e : errors) {
      EXPECT_THAT(e, HasSubstr("allreduce #0")) << "round " << round;
    }
  }
}

TEST_P(FaultsTest, OpTypeAndKindMismatchesAreNamed) {
  struct Case {
    std::function<void(Communicator&, std::vector<float>&)> call;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {[](Communicator& c, std::vector<float>& b) {
         c.AllReduce(b.data(), b.data(), 8, DataType::kFloat32,
                     c.rank() == 0 ? ReduceOp::kSum : ReduceOp::kMax);
       },
       {"float32[8] sum", "float32[8] max", "does not match"}},
      {[](Communicator& c, std::vector<float>& b) {
         c.AllReduce(b.data(), b.data(), 8,
                     c.rank() == 0 ? DataType::kFloat32 : DataType::kInt32,
                     ReduceOp::kSum);
       },
       {"float32[8]", "int32[8]", "does not match"}},
      {[](Communicator& c, std::vector<float>& b) {
         c.Broadcast(b.data(), b.data(), 8, DataType::kFloat32,
                     c.rank() == 0 ? 0 : 1);
       },
       {"root 0", "root 1", "does not match"}},
      {[](Communicator& c, std::vector<float>& b) {
         if (c.rank() == 0) {
           c.AllReduce(b.data(), b.data(), 8, DataType::kFloat32,
                       ReduceOp::kSum);
         } else {
           c.Broadcast(b.data(), b.data(), 8, DataType::kFloat32, 0);
         }
       },
       {"allreduce #0", "broadcast #0", "does not match"}},
  };
  for (const Case& c : cases) {
    Group group = Make(3);
    const auto errors = RunQuickly(group, [&](Communicator& comm) {
      std::vector<float> buf = Floats(8);
      c.call(comm, buf);
    });
    for (const std::string& e : errors) {
      for (const std::string& part : c.expected)
        EXPECT_THAT(e, HasSubstr(part));
    }
  }
}

TEST_P(FaultsTest, MissingRankTimesOutOnEveryWaitingRank) {
  Group group = Make(3);
  const auto errors = RunQuickly(group, [](Communicator& comm) {
    if (comm.rank() == 2) return;  // Never arrives.
    std::vector<float> buf = Floats(100);
    CallOptions options;
    options.timeout = Ms(300);
    comm.AllReduce(buf.data(), buf.data(), 100, DataType::kFloat32,
                   ReduceOp::kSum, options);
  });
  for (int r : {0, 1}) {
    EXPECT_THAT(errors[r], AllOf(HasSubstr("allreduce #0 float32[100]"),
                                 HasSubstr("timed out after")))
        << "rank " << r;
  }
  EXPECT_EQ(errors[2], "");
  // The late rank now finds the group aborted, with the reason.
  std::vector<float> buf = Floats(100);
  try {
    group[2]->AllReduce(buf.data(), buf.data(), 100, DataType::kFloat32,
                        ReduceOp::kSum);
    ADD_FAILURE() << "no error after the group was aborted";
  } catch (const CollectiveError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("aborted"), HasSubstr("timed out")));
  }
}

TEST_P(FaultsTest, NullBufferFailsEveryRank) {
  Group group = Make(3);
  const auto errors = RunQuickly(group, [](Communicator& comm) {
    std::vector<float> buf = Floats(10);
    const float* send = comm.rank() == 1 ? nullptr : buf.data();
    comm.AllReduce(send, buf.data(), 10, DataType::kFloat32, ReduceOp::kSum);
  });
  for (const std::string& e : errors) {
    EXPECT_THAT(e, AllOf(HasSubstr("rank 1 allreduce #0 float32[10] sum"),
                         HasSubstr("send buffer is null")));
  }
}

TEST_P(FaultsTest, RootOutOfRange) {
  Group group = Make(3);
  const auto errors = RunQuickly(group, [](Communicator& comm) {
    std::vector<float> buf = Floats(4);
    comm.Broadcast(buf.data(), buf.data(), 4, DataType::kFloat32, 5);
  });
  for (const std::string& e : errors) {
    EXPECT_THAT(e, AllOf(HasSubstr("broadcast #0 float32[4] root 5"),
                         HasSubstr("root 5 is out of range for 3 ranks")));
  }
}

TEST_P(FaultsTest, DestroyedPeerFailsTheWaitingRank) {
  Group group = Make(2);
  group[1].reset();
  std::vector<float> buf = Floats(16);
  const auto start = std::chrono::steady_clock::now();
  try {
    group[0]->AllReduce(buf.data(), buf.data(), 16, DataType::kFloat32,
                        ReduceOp::kSum);
    ADD_FAILURE() << "no error with a destroyed peer";
  } catch (const CollectiveError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("rank 0 allreduce #0 float32[16]"),
                                HasSubstr("rank 1 has destroyed its "
                                          "communicator")));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, Ms(2000));
}

TEST_P(FaultsTest, AbortFailsCallsInFlightAndLater) {
  Group group = Make(2);
  const auto errors = RunQuickly(group, [](Communicator& comm) {
    if (comm.rank() == 0) {
      std::this_thread::sleep_for(Ms(50));
      comm.Abort("user pressed stop");
      return;
    }
    std::vector<float> buf = Floats(16);
    comm.AllReduce(buf.data(), buf.data(), 16, DataType::kFloat32,
                   ReduceOp::kSum);
  });
  EXPECT_THAT(errors[1], HasSubstr("rank 0 aborted: user pressed stop"));
  try {
    group[0]->Barrier();
    ADD_FAILURE() << "no error after Abort";
  } catch (const CollectiveError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("was aborted"),
                                HasSubstr("user pressed stop")));
  }
}

// A failing replica aborts its communicator from its compute thread and
// from its gradient reducer's, often both, then destroys it: every abort
// after the first is a no-op that keeps the first reason.
TEST_P(FaultsTest, AbortTwiceFromTwoThreadsThenDestroyIsSafe) {
  Group group = Make(2);
  std::thread other([&] { group[0]->Abort("from the reducer"); });
  group[0]->Abort("from the compute thread");
  other.join();
  group[0]->Abort("once more");
  try {
    std::vector<float> buf = Floats(4);
    group[0]->AllReduce(buf.data(), buf.data(), 4, DataType::kFloat32,
                        ReduceOp::kSum);
    ADD_FAILURE() << "no error after Abort";
  } catch (const CollectiveError& e) {
    EXPECT_THAT(e.what(), HasSubstr("was aborted"));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("once more")));
  }
  group.clear();  // Destroys both communicators: no double free.
}

TEST_P(FaultsTest, UnknownAlgorithmInCallOptions) {
  Group group = Make(2);
  const auto errors = RunQuickly(group, [](Communicator& comm) {
    std::vector<float> buf = Floats(4);
    CallOptions options;
    options.algorithm = "tree";
    comm.AllReduce(buf.data(), buf.data(), 4, DataType::kFloat32,
                   ReduceOp::kSum, options);
  });
  for (const std::string& e : errors) {
    EXPECT_THAT(e, AllOf(HasSubstr("unknown algorithm 'tree'"),
                         HasSubstr("ring"), HasSubstr("naive")));
  }
}

TEST_P(FaultsTest, AlgorithmChosenPerCallMustAgree) {
  Group group = Make(2);
  const auto errors = RunQuickly(group, [](Communicator& comm) {
    std::vector<float> buf = Floats(4);
    CallOptions options;
    options.algorithm = comm.rank() == 0 ? "ring" : "naive";
    comm.AllReduce(buf.data(), buf.data(), 4, DataType::kFloat32,
                   ReduceOp::kSum, options);
  });
  for (const std::string& e : errors)
    EXPECT_THAT(e, HasSubstr("does not match"));
}

TEST_P(FaultsTest, BadGroupSizeAndBackend) {
  EXPECT_THROW(CreateGroup(GetParam(), 0), std::invalid_argument);
  EXPECT_THROW(CreateGroup("carrier-pigeon", 2), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Backends, FaultsTest,
                         ::testing::Values("ring", "naive"));

TEST(Backends, RingAndNaiveAreAlwaysAvailable) {
  const std::vector<std::string> names = AvailableBackends();
  EXPECT_NE(std::find(names.begin(), names.end(), "ring"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "naive"), names.end());
}

}  // namespace
}  // namespace ringlet::collectives
