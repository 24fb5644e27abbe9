#include "nn/ops/op_threads.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "nn/compute_options.h"

namespace ringlet::nn {
namespace {

class ParallelForTest : public ::testing::Test {};

TEST_F(ParallelForTest, CoversEveryIndexOnceInContiguousParts) {
  for (int threads : {1, 2, 3, 4}) {
    const auto threads2 = ScopedCompute(&ComputeOptions::op_threads, threads);
    for (int64_t n : {1, 2, 3, 7, 100}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> parts{0};
      ParallelFor(n, [&](int64_t begin, int64_t end, int) {
        EXPECT_LT(begin, end);
        for (int64_t i = begin; i < end; ++i) ++hits[i];
        ++parts;
      });
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(hits[i], 1)
            << "index " << i << " of " << n << ", " << threads << " threads";
      }
      EXPECT_EQ(parts, std::min<int64_t>(threads, n));
    }
  }
}

TEST_F(ParallelForTest, WorkerZeroRunsOnTheCallerTheOthersOnOtherThreads) {
  const auto threads3 = ScopedCompute(&ComputeOptions::op_threads, 3);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::thread::id> ids(3);
  ParallelFor(3, [&](int64_t, int64_t, int worker) {
    ids[worker] = std::this_thread::get_id();
  });
  EXPECT_EQ(ids[0], caller);
  EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), 3u);
}

// The helpers are kept: later calls run on the same thread. (Kernel thread
// ids, not std::thread::id, which a new thread can inherit from a joined
// one.)
TEST_F(ParallelForTest, HelpersAreReusedAcrossCalls) {
  const auto threads4 = ScopedCompute(&ComputeOptions::op_threads, 2);
  pid_t first = 0, second = 0;
  ParallelFor(2, [&](int64_t, int64_t, int w) {
    if (w == 1) first = gettid();
  });
  for (int i = 0; i < 100; ++i) {
    ParallelFor(2, [&](int64_t, int64_t, int w) {
      if (w == 1) second = gettid();
    });
    ASSERT_EQ(first, second) << "call " << i;
  }
}

TEST_F(ParallelForTest, NestedCallsRunInlineAndFinish) {
  const auto threads5 = ScopedCompute(&ComputeOptions::op_threads, 2);
  std::atomic<int> inner{0};
  ParallelFor(2, [&](int64_t, int64_t, int) {
    ParallelFor(10, [&](int64_t begin, int64_t end, int worker) {
      EXPECT_EQ(worker, 0);
      inner += static_cast<int>(end - begin);
    });
  });
  EXPECT_EQ(inner, 20);
}

TEST_F(ParallelForTest, ThreadCountCanChange) {
  for (int threads : {4, 2, 3, 1, 2}) {
    const auto threads6 = ScopedCompute(&ComputeOptions::op_threads, threads);
    std::atomic<int> parts{0};
    ParallelFor(8, [&](int64_t, int64_t, int) { ++parts; });
    EXPECT_EQ(parts, threads);
  }
}

TEST_F(ParallelForTest, CallerExceptionWaitsForHelpersThenPropagates) {
  const auto threads7 = ScopedCompute(&ComputeOptions::op_threads, 2);
  std::atomic<bool> helper_done{false};
  EXPECT_THROW(
      ParallelFor(2,
                  [&](int64_t, int64_t, int worker) {
                    if (worker == 0) throw std::runtime_error("x");
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    helper_done = true;
                  }),
      std::runtime_error);
  EXPECT_TRUE(helper_done);
  // Still usable afterwards.
  std::atomic<int> parts{0};
  ParallelFor(2, [&](int64_t, int64_t, int) { ++parts; });
  EXPECT_EQ(parts, 2);
}

TEST_F(ParallelForTest, EachCallingThreadHasItsOwnHelpers) {
  std::vector<std::thread> callers;
  std::atomic<int> total{0};
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      const auto threads8 = ScopedCompute(&ComputeOptions::op_threads, 2);
      for (int i = 0; i < 50; ++i) {
        ParallelFor(4, [&](int64_t begin, int64_t end, int) {
          total += static_cast<int>(end - begin);
        });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total, 3 * 50 * 4);
}

TEST_F(ParallelForTest, EachItemRunsOnceOnSomeWorker) {
  for (int threads : {1, 2, 3}) {
    const auto threads9 = ScopedCompute(&ComputeOptions::op_threads, threads);
    for (int64_t n : {0, 1, 2, 5, 64}) {
      std::vector<std::atomic<int>> hits(n);
      std::vector<std::atomic<int>> by_worker(threads);
      ParallelForEachItem(n, [&](int64_t item, int worker) {
        ASSERT_GE(worker, 0);
        ASSERT_LT(worker, threads);
        ++hits[item];
        ++by_worker[worker];
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i], 1) << i;
    }
  }
}

// A slow thread takes fewer items: here worker 0 sleeps on its first item
// while the other drains the rest.
TEST_F(ParallelForTest, EachItemGoesToTheNextFreeThread) {
  const auto threads10 = ScopedCompute(&ComputeOptions::op_threads, 2);
  std::vector<std::atomic<int>> by_worker(2);
  std::atomic<bool> first{true};
  ParallelForEachItem(20, [&](int64_t, int worker) {
    if (worker == 0 && first.exchange(false)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ++by_worker[worker];
  });
  EXPECT_EQ(by_worker[0] + by_worker[1], 20);
  EXPECT_GT(by_worker[1], 10);
}

TEST_F(ParallelForTest, RejectsFewerThanOneThread) {
  EXPECT_THROW(ScopedCompute(&ComputeOptions::op_threads, 0),
               std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::nn
