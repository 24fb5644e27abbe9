#include "nn/parallel/replica_group.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "nn/tensor.h"

namespace ringlet::nn {
namespace {

TEST(SplitIntoShards, ContiguousSizesDifferingByAtMostOne) {
  std::vector<float> images(7 * 2 * 3);
  std::vector<int32_t> labels(7);
  const std::vector<ReplicaInput> shards =
      SplitIntoShards(images.data(), labels.data(), 7, {2, 3}, 3);
  ASSERT_EQ(shards.size(), 3u);
  const int64_t counts[] = {3, 2, 2}, begins[] = {0, 3, 5};
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(shards[d].count, counts[d]);
    EXPECT_EQ(shards[d].images, images.data() + begins[d] * 6);
    EXPECT_EQ(shards[d].labels, labels.data() + begins[d]);
    EXPECT_EQ(shards[d].sample_shape, (Shape{2, 3}));
  }
}

TEST(SplitIntoShards, MoreShardsThanSamplesLeavesTheLastOnesEmpty) {
  std::vector<float> images(2);
  std::vector<int32_t> labels(2);
  const std::vector<ReplicaInput> shards =
      SplitIntoShards(images.data(), labels.data(), 2, {1}, 4);
  ASSERT_EQ(shards.size(), 4u);
  EXPECT_EQ(shards[1].images, images.data() + 1);
  for (int d = 2; d < 4; ++d) {
    EXPECT_EQ(shards[d].count, 0);
    EXPECT_EQ(shards[d].images, nullptr);  // Nothing past the batch.
  }
}

TEST(SplitIntoShards, BadCountsAreErrors) {
  EXPECT_THROW(SplitIntoShards(nullptr, nullptr, 4, {1}, 0),
               std::invalid_argument);
  EXPECT_THROW(SplitIntoShards(nullptr, nullptr, -1, {1}, 2),
               std::invalid_argument);
}

TEST(ShardImages, TakesItsShapeFromTheShard) {
  std::vector<float> images = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> labels = {0, 1};
  const ReplicaInput shard =
      SplitIntoShards(images.data(), labels.data(), 2, {1, 3}, 1)[0];
  const Tensor x = ShardImages(shard, Device::Cpu());
  EXPECT_EQ(x.shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(std::vector<float>(x.data(), x.data() + 6), images);
  ReplicaInput shapeless = shard;
  shapeless.sample_shape.clear();
  EXPECT_THROW(ShardImages(shapeless, Device::Cpu()), ShapeError);
}

}  // namespace
}  // namespace ringlet::nn
