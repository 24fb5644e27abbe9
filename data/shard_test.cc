#include "data/shard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace ringlet::data {
namespace {

using ::testing::HasSubstr;

// Class ids as numpy saves them (int64), as bytes, or as int32 (viewed in
// place); anything else, or an id int32 cannot hold, is a clear error.
TEST(ClassIds, TakesUint8Int32AndInt64) {
  std::vector<int32_t> storage;
  const std::vector<int64_t> wide = {3, 0, 9, 2147483647};
  const Shard from_numpy{4, {}, SamplesOf(wide.data(), {})};
  const int32_t* ids = ClassIds(from_numpy, "test", &storage);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 4),
            (std::vector<int32_t>{3, 0, 9, 2147483647}));
  const std::vector<uint8_t> bytes = {255, 1};
  ids = ClassIds(Shard{2, {}, SamplesOf(bytes.data(), {})}, "test", &storage);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 2), (std::vector<int32_t>{255, 1}));
  const std::vector<int32_t> narrow = {4, 5};
  EXPECT_EQ(
      ClassIds(Shard{2, {}, SamplesOf(narrow.data(), {})}, "test", &storage),
      narrow.data());

  const std::vector<int64_t> negative = {1, -1};
  EXPECT_THAT(
      [&] {
        ClassIds(Shard{2, {}, SamplesOf(negative.data(), {})}, "loss",
                 &storage);
      },
      ::testing::ThrowsMessage<std::invalid_argument>(
          HasSubstr("loss: class id -1 of sample 1 is not in [0, 2^31)")));
  const std::vector<int64_t> huge = {int64_t{1} << 31};
  EXPECT_THROW(
      ClassIds(Shard{1, {}, SamplesOf(huge.data(), {})}, "loss", &storage),
      std::invalid_argument);
  const std::vector<float> floats = {1.0f};
  EXPECT_THAT(
      [&] {
        ClassIds(Shard{1, {}, SamplesOf(floats.data(), {})}, "loss", &storage);
      },
      ::testing::ThrowsMessage<std::invalid_argument>(
          HasSubstr("(uint8, int32 or int64)")));
}

TEST(ShardBatch, ContiguousSizesDifferingByAtMostOne) {
  std::vector<float> inputs(7 * 2 * 3);
  std::vector<int32_t> targets(7);
  const Shard batch{7, SamplesOf(inputs.data(), {2, 3}),
                    SamplesOf(targets.data(), {})};
  const std::vector<Shard> shards = ShardBatch(batch, 3);
  ASSERT_EQ(shards.size(), 3u);
  const int64_t counts[] = {3, 2, 2}, begins[] = {0, 3, 5};
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(shards[d].count, counts[d]);
    EXPECT_EQ(shards[d].inputs.As<float>("test"),
              inputs.data() + begins[d] * 6);
    EXPECT_EQ(shards[d].targets.As<int32_t>("test"),
              targets.data() + begins[d]);
    EXPECT_EQ(shards[d].inputs.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_TRUE(shards[d].targets.shape.empty());
  }
}

// Targets of a shape and type of their own: each shard's start moves by
// whole samples of each.
TEST(ShardBatch, InputsAndTargetsOfAnyShapeAndType) {
  std::vector<uint8_t> inputs(5 * 3 * 4 * 4);
  std::vector<float> targets(5 * 10);
  const Shard batch{5, SamplesOf(inputs.data(), {3, 4, 4}),
                    SamplesOf(targets.data(), {10})};
  const std::vector<Shard> shards = ShardBatch(batch, 2);
  EXPECT_EQ(shards[1].count, 2);
  EXPECT_EQ(shards[1].inputs.As<uint8_t>("test"), inputs.data() + 3 * 48);
  EXPECT_EQ(shards[1].targets.As<float>("test"), targets.data() + 3 * 10);
  EXPECT_EQ(shards[1].inputs.bytes(), 48);
  EXPECT_EQ(shards[1].targets.bytes(), 40);
  EXPECT_EQ(shards[1].targets.Describe(), "float32 {10}");
}

TEST(ShardBatch, MoreShardsThanSamplesLeavesTheLastOnesEmpty) {
  std::vector<float> inputs(2);
  std::vector<int64_t> targets(2);
  const std::vector<Shard> shards = ShardBatch(
      Shard{2, SamplesOf(inputs.data(), {1}), SamplesOf(targets.data(), {})},
      4);
  ASSERT_EQ(shards.size(), 4u);
  EXPECT_EQ(shards[1].inputs.data, inputs.data() + 1);
  for (int d = 2; d < 4; ++d) {
    EXPECT_EQ(shards[d].count, 0);
    EXPECT_EQ(shards[d].inputs.data, nullptr);  // Nothing past the batch.
    EXPECT_EQ(shards[d].targets.data, nullptr);
  }
}

TEST(ShardBatch, BadCountsAndShapesAreErrors) {
  EXPECT_THROW(ShardBatch(Shard{4, {}, {}}, 0), std::invalid_argument);
  EXPECT_THROW(ShardBatch(Shard{-1, {}, {}}, 2), std::invalid_argument);
  float x = 0;
  EXPECT_THROW(ShardBatch(Shard{1, SamplesOf(&x, {-1}), SamplesOf(&x, {})}, 1),
               std::invalid_argument);
}

// The samples of a run of shards are where ShardBatch puts them; ranks
// take their shards (one each, or their micro-shards).
TEST(ShardBatch, SamplesOfShardsAndShardsOfRanks) {
  std::vector<float> x(10);
  std::vector<int32_t> y(10);
  const std::vector<Shard> shards = ShardBatch(
      Shard{10, SamplesOf(x.data(), {1}), SamplesOf(y.data(), {})}, 4);
  int64_t begin = 0;
  for (int first = 0; first <= 4; ++first) {
    int64_t end = begin;
    for (int last = first; last <= 4; ++last) {
      const Range r = SamplesOfShards(10, 4, first, last);
      EXPECT_EQ(r.begin, begin) << first << ".." << last;
      EXPECT_EQ(r.end, end) << first << ".." << last;
      if (last < 4) end += shards[last].count;
    }
    if (first < 4) begin += shards[first].count;
  }
  EXPECT_EQ(ShardsOfRanks(4, 1, 2, 4).begin, 1);
  EXPECT_EQ(ShardsOfRanks(4, 1, 2, 4).end, 3);
  // 8 micro-shards over 3 ranks: [0, 2), [2, 5), [5, 8).
  EXPECT_EQ(ShardsOfRanks(8, 1, 1, 3).begin, 2);
  EXPECT_EQ(ShardsOfRanks(8, 1, 1, 3).end, 5);
  EXPECT_EQ(ShardsOfRanks(8, 1, 2, 3).end, 8);
}

TEST(SampleArray, TheWrongTypeIsAnErrorNamingBoth) {
  std::vector<float> targets(4);
  const SampleArray a = SamplesOf(targets.data(), {2});
  try {
    a.As<int32_t>("softmax cross-entropy");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("softmax cross-entropy takes int32 "
                                    "samples; these are float32 {2}"));
  }
}

TEST(CheckShards, NamesTheShardWithoutData) {
  std::vector<float> x(4);
  std::vector<int32_t> y(4);
  std::vector<Shard> shards = {
      Shard{2, SamplesOf(x.data(), {2}), SamplesOf(y.data(), {})},
      Shard{2, SamplesOf(x.data(), {2}), SampleArray{}}};
  try {
    CheckShards(shards, "data parallel");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("data parallel: shard 1 has count 2 and "
                                    "missing inputs or targets"));
  }
  shards[1].targets = SamplesOf(y.data(), {});
  shards[1].count = -1;
  EXPECT_THROW(CheckShards(shards, "x"), std::invalid_argument);
  shards[1].count = 0;
  shards[1].inputs.data = nullptr;
  CheckShards(shards, "x");  // An empty shard needs no data.
}

TEST(LocalBatch, CutHoldsTheLocalShardsOfTheWholeCut) {
  // A batch of 11 in 4 shards (3, 3, 3, 2); this process holds 1 and 2.
  std::vector<float> whole(11 * 2);
  std::vector<int32_t> labels(11);
  for (int i = 0; i < 11; ++i) {
    whole[2 * i] = whole[2 * i + 1] = static_cast<float>(i);
    labels[i] = i;
  }
  const ShardLayout layout{4, {1, 3}};
  const Range mine = layout.LocalSamples(11);
  EXPECT_EQ(mine.begin, 3);
  EXPECT_EQ(mine.end, 9);
  const LocalBatch local =
      CutBatch(11, layout, SamplesOf(whole.data() + 2 * mine.begin, {2}),
               SamplesOf(labels.data() + mine.begin, {}));
  ASSERT_EQ(local.shards.size(), 2u);
  EXPECT_EQ(local.shards[0].count, 3);
  EXPECT_EQ(local.shards[1].count, 3);
  EXPECT_EQ(local.shards[1].targets.As<int32_t>("test")[0], 6);
  EXPECT_NO_THROW(CheckLocalBatch(local, layout, "test"));

  const std::vector<Shard> all = ShardBatch(
      Shard{11, SamplesOf(whole.data(), {2}), SamplesOf(labels.data(), {})}, 4);
  const LocalBatch picked = LocalOf(all, layout, "test");
  EXPECT_EQ(picked.size, 11);
  ASSERT_EQ(picked.shards.size(), 2u);
  EXPECT_EQ(picked.shards[0].targets.As<int32_t>("test")[0], 3);
  EXPECT_THROW(LocalOf(all, ShardLayout{3, {0, 1}}, "test"),
               std::invalid_argument);
}

TEST(LocalBatch, ABatchOfAnotherLayoutOrCutIsRefusedSayingWhy) {
  std::vector<float> x(8);
  std::vector<int32_t> y(8);
  LocalBatch b = CutBatch(8, ShardLayout{2, {0, 1}}, SamplesOf(x.data(), {}),
                          SamplesOf(y.data(), {}));
  EXPECT_THAT(
      [&] {
        CheckLocalBatch(b, ShardLayout{4, {0, 2}}, "engine");
      },
      ::testing::ThrowsMessage<std::invalid_argument>(
          HasSubstr("engine: a batch of shards [0, 1) of 2, where this "
                    "process runs [0, 2) of 4")));
  b.shards[0].count = 3;
  EXPECT_THAT(
      [&] {
        CheckLocalBatch(b, ShardLayout{2, {0, 1}}, "engine");
      },
      ::testing::ThrowsMessage<std::invalid_argument>(
          HasSubstr("shard 0 of a batch of 8 cut into 2 holds 4 "
                    "samples, not 3")));
  EXPECT_THROW(ShardLayout({2, {1, 3}}).Check("x"), std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::data
