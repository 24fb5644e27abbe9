#include "data/batch_split.h"

#include <stdexcept>
#include <string>

namespace ringlet::data {

std::vector<Shard> SplitBatch(int64_t batch_size, int num_shards) {
  if (num_shards < 1) {
    throw std::invalid_argument(
        "SplitBatch: num_shards must be at least 1, got " +
        std::to_string(num_shards));
  }
  if (batch_size < 0) {
    throw std::invalid_argument(
        "SplitBatch: batch_size must not be negative, got " +
        std::to_string(batch_size));
  }
  const int64_t base = batch_size / num_shards;
  const int64_t extra = batch_size % num_shards;
  std::vector<Shard> shards(num_shards);
  int64_t begin = 0;
  for (int i = 0; i < num_shards; ++i) {
    shards[i].begin = begin;
    shards[i].count = base + (i < extra ? 1 : 0);
    begin += shards[i].count;
  }
  return shards;
}

}  // namespace ringlet::data
