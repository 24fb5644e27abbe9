#include "data/batch_split.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace ringlet::data {
namespace {

struct SplitCase {
  int64_t batch;
  int shards;
  std::vector<int64_t> counts;
};

TEST(SplitBatch, SizesMatchTheTable) {
  const std::vector<SplitCase> cases = {
      {256, 1, {256}},       {256, 2, {128, 128}},
      {10, 3, {4, 3, 3}},    {2, 4, {1, 1, 0, 0}},
      {0, 3, {0, 0, 0}},     {7, 7, {1, 1, 1, 1, 1, 1, 1}},
      {11, 4, {3, 3, 3, 2}}, {1, 2, {1, 0}},
  };
  for (const SplitCase& c : cases) {
    const std::vector<Shard> shards = SplitBatch(c.batch, c.shards);
    ASSERT_EQ(shards.size(), c.counts.size()) << c.batch << "/" << c.shards;
    for (size_t i = 0; i < shards.size(); ++i) {
      EXPECT_EQ(shards[i].count, c.counts[i])
          << "shard " << i << " of " << c.batch << "/" << c.shards;
    }
  }
}

TEST(SplitBatch, ShardsAreContiguousCoverAllAndDifferByAtMostOne) {
  for (int64_t batch = 0; batch <= 70; ++batch) {
    for (int k = 1; k <= 9; ++k) {
      const std::vector<Shard> shards = SplitBatch(batch, k);
      int64_t next = 0, smallest = batch, largest = 0;
      for (const Shard& s : shards) {
        EXPECT_EQ(s.begin, next);
        next += s.count;
        smallest = std::min(smallest, s.count);
        largest = std::max(largest, s.count);
      }
      EXPECT_EQ(next, batch);
      EXPECT_LE(largest - smallest, 1) << batch << "/" << k;
    }
  }
}

TEST(SplitBatch, RejectsBadArguments) {
  EXPECT_THROW(SplitBatch(10, 0), std::invalid_argument);
  EXPECT_THROW(SplitBatch(-1, 2), std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::data
