#include "host/memory.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "host/testing/memory_cgroup.h"

namespace ringlet::host {
namespace {

using testing::FakeHost;
using testing::kGiB;
using testing::kMiB;

TEST(HostMemory, MemAvailableIsWhatIsFree) {
  FakeHost host(::testing::TempDir() + "/meminfo_only");
  host.MemInfo(4 * kGiB, 1 * kGiB);
  const HostMemory m = ReadHostMemory();
  EXPECT_EQ(m.available, 1 * kGiB);
  EXPECT_EQ(m.total, 4 * kGiB);
  EXPECT_EQ(m.limit, "");
}

TEST(HostMemory, ACgroupV2LimitBindsBelowTheMachine) {
  FakeHost host(::testing::TempDir() + "/cgroup_v2");
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
  host.Cgroup("memory.max", "max");  // No limit: the machine's again.
  EXPECT_EQ(ReadHostMemory().available, 60 * kGiB);
}

TEST(HostMemory, ACgroupV1LimitIsReadToo) {
  FakeHost host(::testing::TempDir() + "/cgroup_v1");
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

TEST(HostMemory, TheShortfallNamesTheSizeWhatIsFreeAndTheLimit) {
  FakeHost host(::testing::TempDir() + "/shortfall");
  host.MemInfo(64 * kGiB, 60 * kGiB);
  host.Cgroup("memory.max", std::to_string(kGiB));
  host.Cgroup("memory.current", std::to_string(0));
  EXPECT_EQ(HostMemoryShortfall(512 * kMiB), "");
  // 1 GiB less its reserve, 16 MiB.
  EXPECT_EQ(HostMemoryShortfall(3 * kGiB + 512 * kMiB),
            "only 1008.00 MiB of the host's memory are free (the memory "
            "cgroup's limit of 1.00 GiB (" +
                host.cgroup() + "/memory.max))");
}

// ulimit -v binds where it leaves less than the machine: checked in a
// child, whose limit ends with it.
TEST(HostMemory, TheShortfallCountsTheAddressSpaceLimit) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers' shadow memory needs more address space "
                  "than the limit leaves";
#endif
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit limit{};
    getrlimit(RLIMIT_AS, &limit);
    limit.rlim_cur = static_cast<rlim_t>(4 * kGiB);
    if (setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(2);
    std::string why;
    const int64_t left = AddressSpaceLeft(&why);
    const std::string shortfall = HostMemoryShortfall(8 * kGiB);
    // 4 GiB / 32 = 128 MiB kept for the libraries' own allocations.
    const int64_t room = AddressSpaceForAllocations();
    const bool ok =
        left > 0 && left < 4 * kGiB && room == left - (int64_t{128} << 20) &&
        HostMemoryShortfall(room + 1) != "" &&
        HostMemoryShortfall(room) == "" &&
        why == "the address space is limited to 4.00 GiB by ulimit -v" &&
        shortfall.find(
            "(the address space is limited to 4.00 GiB by ulimit "
            "-v)") != std::string::npos;
    ::_exit(ok ? 0 : 3);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(HostMemory, TheAddressSpaceReserveIsAThirtySecondWithinBounds) {
  EXPECT_EQ(AddressSpaceReserve(int64_t{512} << 20), int64_t{32} << 20);
  EXPECT_EQ(AddressSpaceReserve(4 * kGiB), int64_t{128} << 20);
  EXPECT_EQ(AddressSpaceReserve(64 * kGiB), int64_t{256} << 20);
}

TEST(HostMemory, FormatBytesReadsAsPeopleWriteSizes) {
  EXPECT_EQ(FormatBytes(512), "512 bytes");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(3 * kGiB + 512 * kMiB), "3.50 GiB");
}

}  // namespace
}  // namespace ringlet::host
