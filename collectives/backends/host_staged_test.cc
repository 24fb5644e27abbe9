// StageThroughHost over the host ring, with a stand-in "device": bytes
// kept XOR-scrambled, so a call that handed the device buffer to the host
// communicator instead of staging it would compute garbage.
#include "collectives/backends/host_staged.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/collectives.h"
#include "collectives/testing/rank_threads.h"

namespace ringlet::collectives {
namespace {

using testing::Group;
using ::testing::HasSubstr;
using testing::RunRanks;

constexpr unsigned char kScramble = 0x5A;

void Scramble(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < bytes; ++i) d[i] = s[i] ^ kScramble;
}

StagingCopies ScrambledDevice() {
  StagingCopies copies;
  copies.to_host = Scramble;
  copies.to_device = Scramble;
  copies.allocate_host = [](size_t bytes) {
    return std::shared_ptr<void>(
        new char[bytes], [](void* p) { delete[] static_cast<char*>(p); });
  };
  return copies;
}

// A "device" buffer holding `values`.
std::vector<unsigned char> OnDevice(const std::vector<float>& values) {
  std::vector<unsigned char> bytes(values.size() * sizeof(float));
  Scramble(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> FromDevice(const std::vector<unsigned char>& bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  Scramble(values.data(), bytes.data(), bytes.size());
  return values;
}

Group StagedGroup(int size, StagingCopies copies = ScrambledDevice()) {
  CommOptions options;
  options.timeout = std::chrono::seconds(10);
  Group host = CreateGroup("ring", size, options);
  Group staged;
  for (auto& comm : host) {
    staged.push_back(StageThroughHost(std::move(comm), copies));
  }
  return staged;
}

TEST(HostStagedTest, EveryCollectiveGivesTheHostResultOnTheDevice) {
  constexpr int kRanks = 3;
  Group group = StagedGroup(kRanks);
  std::vector<std::vector<float>> reduced(kRanks), broadcast(kRanks),
      scattered(kRanks), gathered(kRanks);
  const auto errors = RunRanks(group, [&](Communicator& comm) {
    const int r = comm.rank();
    // allreduce of 5 values: rank r holds r + i.
    std::vector<float> mine(5);
    for (int i = 0; i < 5; ++i) mine[i] = static_cast<float>(r + i);
    auto dev = OnDevice(mine);
    comm.AllReduce(dev.data(), dev.data(), 5, DataType::kFloat32,
                   ReduceOp::kSum);
    reduced[r] = FromDevice(dev);
    // broadcast from rank 1.
    auto from = OnDevice({10.0f * r, 10.0f * r + 1});
    auto to = OnDevice({-1, -1});
    comm.Broadcast(from.data(), to.data(), 2, DataType::kFloat32, 1);
    broadcast[r] = FromDevice(to);
    // reduce-scatter of 2 per rank, max.
    std::vector<float> all(2 * kRanks);
    for (int i = 0; i < 2 * kRanks; ++i) all[i] = static_cast<float>(r * i);
    auto send = OnDevice(all);
    auto recv = OnDevice({0, 0});
    comm.ReduceScatter(send.data(), recv.data(), 2, DataType::kFloat32,
                       ReduceOp::kMax);
    scattered[r] = FromDevice(recv);
    // allgather of one value each.
    auto one = OnDevice({100.0f + r});
    auto every = OnDevice(std::vector<float>(kRanks, 0));
    comm.AllGather(one.data(), every.data(), 1, DataType::kFloat32);
    gathered[r] = FromDevice(every);
    comm.Barrier();
  });
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(reduced[r], (std::vector<float>{3, 6, 9, 12, 15})) << r;
    EXPECT_EQ(broadcast[r], (std::vector<float>{10, 11})) << r;
    // Block r of max over ranks q of q * i: (kRanks - 1) * i.
    EXPECT_EQ(scattered[r],
              (std::vector<float>{2.0f * (2 * r), 2.0f * (2 * r + 1)}))
        << r;
    EXPECT_EQ(gathered[r], (std::vector<float>{100, 101, 102})) << r;
  }
}

TEST(HostStagedTest, StagingGrowsForLargerCallsAndKeepsItsBuffer) {
  int allocations = 0;
  StagingCopies copies = ScrambledDevice();
  const auto allocate = copies.allocate_host;
  copies.allocate_host = [&allocations, allocate](size_t bytes) {
    ++allocations;  // Rank threads run at once: only read after joining.
    return allocate(bytes);
  };
  Group group = StagedGroup(1, copies);
  for (size_t count : {4, 4, 1000, 10, 1000}) {
    auto dev = OnDevice(std::vector<float>(count, 2.0f));
    group[0]->AllReduce(dev.data(), dev.data(), count, DataType::kFloat32,
                        ReduceOp::kSum);
    EXPECT_EQ(FromDevice(dev), std::vector<float>(count, 2.0f));
  }
  EXPECT_EQ(allocations, 2);  // 16 bytes, then 4000.
}

// A copy that fails on one rank ends the call on every rank with that
// reason, long before the timeout.
TEST(HostStagedTest, AFailedCopyFailsEveryRank) {
  StagingCopies broken = ScrambledDevice();
  broken.to_host = [](void*, const void*, size_t) {
    throw std::runtime_error("an illegal memory access was encountered");
  };
  CommOptions options;
  options.timeout = std::chrono::seconds(30);
  Group host = CreateGroup("ring", 2, options);
  Group group;
  group.push_back(StageThroughHost(std::move(host[0]), broken));
  group.push_back(StageThroughHost(std::move(host[1]), ScrambledDevice()));
  const auto start = std::chrono::steady_clock::now();
  const auto errors = RunRanks(group, [](Communicator& comm) {
    auto dev = OnDevice({1, 2, 3});
    comm.AllReduce(dev.data(), dev.data(), 3, DataType::kFloat32,
                   ReduceOp::kSum);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_THAT(errors[0], HasSubstr("rank 0: copying from the device for "
                                   "allreduce failed: an illegal memory"));
  EXPECT_THAT(errors[1], HasSubstr("illegal memory access"));
}

TEST(HostStagedTest, CudaStagingNamesAGpuThatIsNotThere) {
  try {
    CudaStaging(999);
    FAIL() << "expected a CollectiveError";
  } catch (const CollectiveError& e) {
    // "does not exist" with CUDA built in, "has no CUDA" without.
    const std::string what = e.what();
    EXPECT_TRUE(what.find("cuda:999 does not exist") != std::string::npos ||
                what.find("has no CUDA") != std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace ringlet::collectives
