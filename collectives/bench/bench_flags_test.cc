#include "collectives/bench/bench_flags.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace ringlet::collectives {
namespace {

TEST(ParseBytes, AcceptsPlainAndSuffixedSizes) {
  EXPECT_EQ(ParseBytes("4"), 4u);
  EXPECT_EQ(ParseBytes("64K"), 65536u);
  EXPECT_EQ(ParseBytes("1M"), 1048576u);
  EXPECT_EQ(ParseBytes("2G"), 2147483648u);
  EXPECT_EQ(ParseBytes("256m"), 268435456u);
}

TEST(ParseBytes, RejectsGarbage) {
  EXPECT_THROW(ParseBytes(""), std::invalid_argument);
  EXPECT_THROW(ParseBytes("M"), std::invalid_argument);
  EXPECT_THROW(ParseBytes("12X"), std::invalid_argument);
  EXPECT_THROW(ParseBytes("-4"), std::invalid_argument);
}

TEST(ParseBytes, RefusesSizesBeyond64Bits) {
  EXPECT_EQ(ParseBytes("17179869183G"), 17179869183ull << 30);
  // Once wrapped around to 0.
  EXPECT_THROW(ParseBytes("17179869184G"), std::invalid_argument);
  EXPECT_THROW(ParseBytes("99999999999999999999"), std::invalid_argument);
}

// Every buffer a rank allocates is counted: a host copy, send and receive
// (before, two of the three), and the reproducible sum's words.
TEST(CheckBenchMemory, CountsWhatEachRankAllocates) {
  const uint64_t gib = uint64_t{1} << 30;
  EXPECT_EQ(BenchHostBytesPerRank(gib, 4, false, false), 3 * gib);
  EXPECT_EQ(BenchHostBytesPerRank(gib, 4, true, false), gib);
  EXPECT_EQ(BenchHostBytesPerRank(gib, 4, false, true), 5 * gib);
  EXPECT_EQ(BenchHostBytesPerRank(gib, 2, false, true), 7 * gib);
  EXPECT_EQ(BenchHostBytesPerRank(gib, 4, true, true), gib);
  EXPECT_EQ(BenchHostBytesPerRank(UINT64_MAX, 4, false, true), UINT64_MAX);
}

TEST(CheckBenchMemory, RefusesWhatTheHostCannotGiveSayingWhy) {
  const uint64_t gib = uint64_t{1} << 30;
  EXPECT_NO_THROW(CheckBenchMemory("4G", 12 * gib, 2, ""));
  try {
    CheckBenchMemory("4G", 12 * gib, 2,
                     "only 20.00 GiB of the host's memory are free");
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "--max_bytes=4G needs 24.0 GiB for 2 ranks on this host: only "
              "20.00 GiB of the host's memory are free; lower --max_bytes or "
              "--ranks");
  }
}

TEST(SweepSizes, DoublesAndRoundsToElements) {
  EXPECT_EQ(SweepSizes(4, 64, 2, 4), (std::vector<uint64_t>{4, 8, 16, 32, 64}));
  EXPECT_EQ(SweepSizes(1, 16, 4, 8), (std::vector<uint64_t>{8, 16}));
  EXPECT_EQ(SweepSizes(1024, 1024, 2, 4), (std::vector<uint64_t>{1024}));
  EXPECT_THROW(SweepSizes(4, 64, 1.0, 4), std::invalid_argument);
}

TEST(CallsPerRow, SmallSizesGetMoreCalls) {
  EXPECT_EQ(CallsPerRow(4, 20), 100000);
  EXPECT_EQ(CallsPerRow(1 << 20, 20), 1024);
  EXPECT_EQ(CallsPerRow(256 << 20, 20), 20);
  EXPECT_EQ(CallsPerRow(4, 20, 1e-6), 100000);  // 0.1 s: within budget.
}

// 64 ranks on 2 cores: a call of 5 ms made the 100,000 calls of a 4-byte
// row last over 8 minutes; the budget keeps it near half a second, never
// below --iters.
TEST(CallsPerRow, SlowCallsAreBoundedByTime) {
  EXPECT_EQ(CallsPerRow(4, 1, 5e-3), 100);
  EXPECT_EQ(CallsPerRow(4, 300, 5e-3), 300);
  EXPECT_EQ(CallsPerRow(4, 1, 10.0), 1);
}

TEST(AllReduceBusFactor, MatchesNcclTests) {
  EXPECT_DOUBLE_EQ(AllReduceBusFactor(2), 1.0);
  EXPECT_DOUBLE_EQ(AllReduceBusFactor(4), 1.5);
  EXPECT_DOUBLE_EQ(AllReduceBusFactor(1), 0.0);
}

}  // namespace
}  // namespace ringlet::collectives
