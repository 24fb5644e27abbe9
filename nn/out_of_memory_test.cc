#include "nn/out_of_memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>

#include "nn/host_block_cache.h"
#include "nn/tensor.h"

namespace ringlet::nn {
namespace {

using ::testing::HasSubstr;

TEST(FormatBytes, ReadsAsPeopleWriteSizes) {
  EXPECT_EQ(FormatBytes(0), "0 bytes");
  EXPECT_EQ(FormatBytes(1023), "1023 bytes");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 20), "3.00 MiB");
  EXPECT_EQ(FormatBytes(int64_t{80} << 30), "80.00 GiB");
}

TEST(OutOfMemory, IsABadAllocWhoseMessageSaysWhereAndHowMuch) {
  MemoryShortage s;
  s.where = "cuda:0";
  s.requested = int64_t{3} << 30;
  s.held = int64_t{70} << 30;
  s.free = int64_t{1} << 30;
  s.total = int64_t{80} << 30;
  const OutOfMemory e(s);
  const std::bad_alloc& base = e;
  EXPECT_STREQ(base.what(),
               "cuda:0 is out of memory: asked for 3.00 GiB with 1.00 GiB "
               "free of 80.00 GiB; this process held 70.00 GiB there");
}

// A library that allocates for itself (cuBLAS's handle) says no byte
// count: the message names what was asked for instead.
TEST(OutOfMemory, NamesWhatWasAskedForWhenNoByteCountIsKnown) {
  MemoryShortage s;
  s.where = "cuda:0";
  s.asked_for = "a cuBLAS handle";
  s.held = int64_t{70} << 30;
  s.free = int64_t{1} << 20;
  s.total = int64_t{80} << 30;
  EXPECT_STREQ(OutOfMemory(s).what(),
               "cuda:0 is out of memory: asked for a cuBLAS handle with "
               "1.00 MiB free of 80.00 GiB; this process held 70.00 GiB "
               "there");
}

TEST(HostShortage, ReadsTheHostsMemory) {
  const MemoryShortage s = HostShortage(100, 200);
  EXPECT_EQ(s.where, "the host");
  EXPECT_GT(s.total, 0);
  EXPECT_GE(s.free, 0);
  EXPECT_LE(s.free, s.total);
}

// Every host tensor allocation can be made to fail: the injected one
// throws OutOfMemory, the ones before and after it work.
TEST(InjectAllocationFailure, FailsExactlyTheChosenAllocation) {
  InjectAllocationFailure(2);
  Tensor a({4});
  Tensor b({1 << 20});
  try {
    Tensor c({3, 5});
    ADD_FAILURE() << "the third allocation did not fail";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(e.shortage().where, "the host");
    EXPECT_EQ(e.shortage().requested, 15 * 4);
    // At least the two tensors above are held.
    EXPECT_GE(e.shortage().held, (1 << 20) * 4 + 16);
  }
  Tensor d({3, 5});  // Once only.
  InjectAllocationFailure(-1);
  const int64_t before = AllocationsSoFar();
  Tensor e({2});
  EXPECT_EQ(AllocationsSoFar(), before + 1);
}

TEST(Tensor, AShapeWhoseCountOverflowsIsAShapeErrorNotAWrap) {
  try {
    Tensor t({int64_t{1} << 40, int64_t{1} << 40});
    ADD_FAILURE() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("more elements than a 64-bit count"));
  }
  try {
    Tensor t({int64_t{1} << 61, 2});
    ADD_FAILURE() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("more bytes than any memory holds"));
  }
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
TEST(HostShortage, UnderAnAddressSpaceLimit) {
  GTEST_SKIP() << "sanitizers reserve their shadow memory past any ulimit -v";
}
#else
// A tensor past `ulimit -v` fails as OutOfMemory naming the limit (what a
// user running under one needs to know), not as a crash.
TEST(HostShortage, UnderAnAddressSpaceLimit) {
  EXPECT_EXIT(
      {
        rlimit limit{};
        getrlimit(RLIMIT_AS, &limit);
        limit.rlim_cur = rlim_t{4} << 30;
        setrlimit(RLIMIT_AS, &limit);
        try {
          Tensor big({int64_t{2} << 30});  // 8 GiB.
        } catch (const OutOfMemory& e) {
          const std::string what = e.what();
          std::exit(what.find("ulimit -v") != std::string::npos &&
                            what.find("8.00 GiB") != std::string::npos
                        ? 0
                        : 2);
        }
        std::exit(3);
      },
      ::testing::ExitedWithCode(0), "");
}
#endif

}  // namespace
}  // namespace ringlet::nn
