#include "parallel/device_workers.h"

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>

#include "gtest/gtest.h"
#include "nn/ops/op_threads.h"

namespace ringlet::parallel {
namespace {

TEST(DeviceWorkersTest, RunsEveryDeviceOnItsOwnThreadWithItsCores) {
  DeviceWorkers workers(3, 2);
  std::mutex mu;
  std::set<int> devices;
  std::set<std::thread::id> threads;
  for (int round = 0; round < 5; ++round) {
    workers.Run([&](int d) {
      std::lock_guard<std::mutex> lock(mu);
      devices.insert(d);
      threads.insert(std::this_thread::get_id());
      EXPECT_EQ(nn::OpThreads(), 2);
    });
  }
  EXPECT_EQ(devices, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(threads.size(), 3u);  // The same threads every round.
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
}

TEST(DeviceWorkersTest, RethrowsTheFirstFailureAfterAllFinish) {
  DeviceWorkers workers(2, 1);
  std::atomic<int> finished{0};
  try {
    workers.Run([&](int d) {
      if (d == 1) throw std::runtime_error("device 1 broke");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      finished++;
    });
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "device 1 broke");
  }
  EXPECT_EQ(finished.load(), 1);  // Device 0 ran to the end first.
  // The workers are still usable after a failure.
  workers.Run([&](int) { finished++; });
  EXPECT_EQ(finished.load(), 3);
}

TEST(DeviceWorkersTest, RejectsBadCounts) {
  EXPECT_THROW(DeviceWorkers(0, 1), std::invalid_argument);
  EXPECT_THROW(DeviceWorkers(2, 0), std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::parallel
