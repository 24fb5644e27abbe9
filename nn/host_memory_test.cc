#include "nn/host_memory.h"

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

#include "nn/out_of_memory.h"
#include "nn/tensor.h"

namespace ringlet::nn {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// A meminfo file and a cgroup folder the test writes, in place of the
// machine's, for the life of the object.
class FakeHost {
 public:
  explicit FakeHost(const std::string& name)
      : dir_(::testing::TempDir() + "/" + name) {
    ::mkdir(dir_.c_str(), 0755);
    ::mkdir((dir_ + "/cgroup").c_str(), 0755);
    ::setenv("RINGLET_MEMINFO", (dir_ + "/meminfo").c_str(), 1);
    ::setenv("RINGLET_MEMORY_CGROUP", (dir_ + "/cgroup").c_str(), 1);
  }
  ~FakeHost() {
    ::unsetenv("RINGLET_MEMINFO");
    ::unsetenv("RINGLET_MEMORY_CGROUP");
  }
  void MemInfo(int64_t total, int64_t available) {
    std::ofstream(dir_ + "/meminfo")
        << "MemTotal:       " << total / 1024 << " kB\n"
        << "MemFree:        1000 kB\n"
        << "MemAvailable:   " << available / 1024 << " kB\n";
  }
  void Cgroup(const std::string& file, const std::string& value) {
    std::ofstream(dir_ + "/cgroup/" + file) << value << "\n";
  }
  std::string cgroup() const { return dir_ + "/cgroup"; }

 private:
  std::string dir_;
};

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
  FakeHost host("meminfo_only");
  host.MemInfo(4 * kGiB, 1 * kGiB);
  const HostMemory m = ReadHostMemory();
  EXPECT_EQ(m.available, 1 * kGiB);
  EXPECT_EQ(m.total, 4 * kGiB);
  EXPECT_EQ(m.limit, "");
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
  FakeHost host("cgroup_v2");
  host.MemInfo(64 * kGiB, 60 * kGiB);
  host.Cgroup("memory.max", std::to_string(512 * kMiB));
  host.Cgroup("memory.current", std::to_string(200 * kMiB));
  // The page cache the cgroup could drop counts as free.
  host.Cgroup("memory.stat",
              "anon 1000\ninactive_file " + std::to_string(100 * kMiB) + "\n");
  const HostMemory m = ReadHostMemory();
  EXPECT_EQ(m.available, 412 * kMiB);
  EXPECT_EQ(m.total, 512 * kMiB);
  EXPECT_EQ(m.limit, "the memory cgroup's limit of 512.00 MiB (" +
                         host.cgroup() + "/memory.max)");
  const std::string error = AllocationError(600 * kMiB);
  // 412 MiB less the reserve, 8 MiB.
  EXPECT_NE(error.find("asked for 600.00 MiB with 404.00 MiB free of 512.00 "
                       "MiB; this process held"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("(the memory cgroup's limit of 512.00 MiB"),
            std::string::npos)
      << error;
  host.Cgroup("memory.max", "max");  // No limit: the machine's again.
  EXPECT_EQ(ReadHostMemory().available, 60 * kGiB);
}

TEST(HostMemory, ACgroupV1LimitIsReadToo) {
  FakeHost host("cgroup_v1");
  host.MemInfo(64 * kGiB, 60 * kGiB);
  host.Cgroup("memory.limit_in_bytes", std::to_string(kGiB));
  host.Cgroup("memory.usage_in_bytes", std::to_string(256 * kMiB));
  EXPECT_EQ(ReadHostMemory().available, 768 * kMiB);
  // v1's "no limit" is a number near 2^63.
  host.Cgroup("memory.limit_in_bytes", "9223372036854771712");
  EXPECT_EQ(ReadHostMemory().available, 60 * kGiB);
}

TEST(HostMemory, AReserveIsKeptAndUnknownMemoryDoesNotRefuse) {
  HostMemory m;
  EXPECT_TRUE(HostMemoryFits(m, int64_t{1} << 50));  // Nothing known.
  m.total = 64 * kGiB;
  m.available = 1 * kGiB;
  EXPECT_TRUE(HostMemoryFits(m, 768 * kMiB));
  EXPECT_FALSE(HostMemoryFits(m, 769 * kMiB));  // 256 MiB kept back.
  m.total = 1 * kGiB;  // 1/64 of a small machine: 16 MiB.
  EXPECT_TRUE(HostMemoryFits(m, 1008 * kMiB));
  EXPECT_FALSE(HostMemoryFits(m, 1009 * kMiB));
}

// Runs `body` in a child process inside a real memory cgroup (v1 or v2)
// limited to `limit` bytes, where this machine lets a test make one.
// Returns the child's exit code, or -1 when no cgroup could be made, or
// 128 + the signal that killed it (the OOM killer: 137).
int RunInCgroup(int64_t limit, const std::function<int()>& body) {
  std::string base;
  for (const std::string dir :
       {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    if (::access((dir + "/cgroup.procs").c_str(), W_OK) == 0) {
      base = dir;
      break;
    }
  }
  const std::string group =
      base + "/ringlet_host_memory_test_" + std::to_string(::getpid());
  if (base.empty() || ::mkdir(group.c_str(), 0755) != 0) return -1;
  const bool v2 = ::access((group + "/memory.max").c_str(), F_OK) == 0;
  const std::string limit_file =
      group + (v2 ? "/memory.max" : "/memory.limit_in_bytes");
  const bool made =
      static_cast<bool>(std::ofstream(limit_file) << limit << "\n");
  const pid_t child = made ? ::fork() : -1;
  if (child == 0) {
    std::ofstream(group + "/cgroup.procs") << ::getpid() << "\n";
    ::_exit(body());
  }
  int status = -1;
  if (child > 0) ::waitpid(child, &status, 0);
  ::rmdir(group.c_str());
  if (child < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
