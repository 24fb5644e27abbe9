// Splitting one batch across k devices, d2l's split_batch for any batch size.
#ifndef RINGLET_DATA_BATCH_SPLIT_H_
#define RINGLET_DATA_BATCH_SPLIT_H_

#include <cstdint>
#include <vector>

namespace ringlet::data {

// A contiguous run [begin, begin + count) of a batch's samples.
struct Shard {
  int64_t begin = 0;
  int64_t count = 0;
};

// Splits `batch_size` samples into `num_shards` contiguous shards, in order.
// Sizes differ by at most one: the first batch_size % num_shards shards get
// one extra sample, so when the batch is smaller than num_shards the last
// shards are empty. Throws std::invalid_argument for a negative batch size or
// num_shards < 1.
std::vector<Shard> SplitBatch(int64_t batch_size, int num_shards);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_BATCH_SPLIT_H_
