#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "host/memory.h"
#include "host/testing/memory_cgroup.h"
#include "nn/out_of_memory.h"
#include "nn/tensor.h"

namespace ringlet::nn {
namespace {

using host::testing::FakeHost;
using host::testing::kGiB;
using host::testing::kMiB;
using host::testing::RunInCgroup;

// The message of the OutOfMemory a host tensor of `bytes` throws; "" when
// it fits.
std::string AllocationError(int64_t bytes) {
  try {
    Tensor t({bytes / 4});
  } catch (const OutOfMemory& e) {
    return e.what();
  }
  return "";
}

TEST(HostMemory, MemAvailableBoundsWhatIsAllocated) {
  FakeHost host(::testing::TempDir() + "/meminfo_only");
  host.MemInfo(4 * kGiB, 1 * kGiB);
  // Past what is available: the one-line error, not the OOM killer later.
  EXPECT_EQ(AllocationError(2 * kGiB).rfind(
                "the host is out of memory: asked for 2.00 GiB with 960.00 MiB "
                "free of 4.00 GiB; this process held ",
                0),
            0u)
      << AllocationError(2 * kGiB);
  EXPECT_EQ(AllocationError(64 * kMiB), "");
}

TEST(HostMemory, ACgroupV2LimitBindsBelowTheMachine) {
  FakeHost host(::testing::TempDir() + "/cgroup_v2");
  host.MemInfo(64 * kGiB, 60 * kGiB);
  host.Cgroup("memory.max", std::to_string(512 * kMiB));
  host.Cgroup("memory.current", std::to_string(200 * kMiB));
  // The page cache the cgroup could drop counts as free.
  host.Cgroup("memory.stat",
              "anon 1000\ninactive_file " + std::to_string(100 * kMiB) + "\n");
  const std::string error = AllocationError(600 * kMiB);
  // 412 MiB less the reserve, 8 MiB.
  EXPECT_NE(error.find("asked for 600.00 MiB with 404.00 MiB free of 512.00 "
                       "MiB; this process held"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("(the memory cgroup's limit of 512.00 MiB"),
            std::string::npos)
      << error;
}

// A child in a 256 MiB cgroup asks for 1 GiB and gets the error, where
// before it was killed.
TEST(HostMemory, ARealCgroupLimitIsTheOneLineError) {
  const int code = RunInCgroup(256 * kMiB, [] {
    const std::string error = AllocationError(1 * kGiB);
    return error.find("out of memory: asked for 1.00 GiB") != std::string::npos
               ? 0
               : 3;
  });
  if (code < 0) GTEST_SKIP() << "no memory cgroup this test may make";
  EXPECT_EQ(code, 0) << (code > 128 ? "killed" : "no one-line error");
}

// Eight threads (replicas) fill 32 MiB tensors at once in a 512 MiB
// cgroup until one is refused: each block is counted before the next is
// checked, so none is killed for blocks that all passed one check.
TEST(HostMemory, ReplicasAllocatingAtOnceGetTheErrorNotTheKiller) {
  const int code = RunInCgroup(512 * kMiB, [] {
    std::atomic<bool> refused{false};
    std::vector<std::thread> replicas;
    for (int r = 0; r < 8; ++r) {
      replicas.emplace_back([&] {
        std::vector<Tensor> held;
        try {
          for (int i = 0; i < 64 && !refused; ++i) {
            held.emplace_back(std::vector<int64_t>{8 * kMiB});
            held.back().Fill(1.0f);
          }
        } catch (const OutOfMemory&) {
          refused = true;
        }
      });
    }
    for (std::thread& t : replicas) t.join();
    return refused ? 0 : 3;
  });
  if (code < 0) GTEST_SKIP() << "no memory cgroup this test may make";
  EXPECT_EQ(code, 0) << (code > 128 ? "killed" : "nothing was refused");
}

}  // namespace
}  // namespace ringlet::nn
