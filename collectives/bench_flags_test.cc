#include "collectives/bench_flags.h"

#include <gtest/gtest.h>

#include <stdexcept>

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
}

TEST(AllReduceBusFactor, MatchesNcclTests) {
  EXPECT_DOUBLE_EQ(AllReduceBusFactor(2), 1.0);
  EXPECT_DOUBLE_EQ(AllReduceBusFactor(4), 1.5);
  EXPECT_DOUBLE_EQ(AllReduceBusFactor(1), 0.0);
}

}  // namespace
}  // namespace ringlet::collectives
