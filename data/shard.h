// A device's part of a batch, and d2l's split_batch: the one shard type
// every data-parallel step takes (parallel/'s engine, DataParallel, the
// from-scratch trainer, a user's own loop), cut once, here, by the loader
// (BatchLoader with a ShardLayout) or by the caller.
//
// A shard is `count` samples, each an input and a target, held in host
// memory the caller owns (a view: nothing is copied). Inputs and targets
// each have one sample's shape and an element type of their own: a
// Fashion-MNIST image is a float32 input of shape {1, 28, 28} with an int32
// class id of shape {} as target; a regression's target is float32 {k}; a
// multi-label one float32 {classes}. The model takes the inputs as a
// [count, input shape...] tensor; the loss reads the targets.
#ifndef RINGLET_DATA_SHARD_H_
#define RINGLET_DATA_SHARD_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/array.h"

namespace ringlet::data {

// One kind of value (a SampleSpec: type and one sample's shape) of
// consecutive samples in host memory: sample i's elements start at
// data + i * bytes().
struct SampleArray : SampleSpec {
  const void* data = nullptr;

  // The samples from `first` on (first >= 0; not checked against a count,
  // which the array does not know).
  SampleArray From(int64_t first) const;
  // The elements as T; throws std::invalid_argument, starting with `who`,
  // naming both types when they are not T.
  template <typename T>
  const T* As(const char* who) const {
    CheckType(ElementTypeOf<T>(), who);
    return static_cast<const T*>(data);
  }

 private:
  void CheckType(ElementType wanted, const char* who) const;
};

// `data` as samples of `shape` (one sample's).
template <typename T>
SampleArray SamplesOf(const T* data, std::vector<int64_t> shape) {
  return SampleArray{{ElementTypeOf<T>(), std::move(shape)}, data};
}

struct Shard {
  int64_t count = 0;
  SampleArray inputs;
  SampleArray targets;
};

// The targets as one int32 class id a sample (what softmax cross-entropy
// and accuracy read): int32 targets as they are; uint8 and int64 ones
// (numpy's default integer) converted into `*storage`, which must outlive
// the pointer. Throws std::invalid_argument, starting with `who`, for
// targets of another type or shape, or an int64 id outside [0, 2^31).
const int32_t* ClassIds(const Shard& shard, const char* who,
                        std::vector<int32_t>* storage);

// d2l's split_batch: the batch's samples in `shards` contiguous shards, in
// order, whose sizes differ by at most one (the first count % shards get
// one more); when there are fewer samples than shards the last ones are
// empty (count 0, no data). Throws std::invalid_argument for shards < 1, a
// negative count, or a dimension below 0.
std::vector<Shard> ShardBatch(const Shard& batch, int shards);

// [begin, end) of a batch's samples, or of its shards.
struct Range {
  int64_t begin = 0;
  int64_t end = 0;
};

// The samples that shards [first, end) of `shards` hold when ShardBatch cuts
// a batch of `batch` samples: what a process computing those shards needs
// to load.
Range SamplesOfShards(int64_t batch, int shards, int first, int end);

// The shards of `shards` that ranks [first_rank, first_rank + local_ranks)
// of `ranks` compute: rank r takes [r S / R, (r + 1) S / R) (one each when
// S = R; a reproducible run's micro-shards otherwise).
Range ShardsOfRanks(int shards, int first_rank, int local_ranks, int ranks);

// Throws std::invalid_argument, starting with `who`, for a shard with a
// negative count, samples without inputs or targets, or a dimension below
// 0 (shard first + r is named: `shards` may be a slice).
void CheckShards(const std::vector<Shard>& shards, const char* who,
                 int first = 0);

// How each batch of a job is cut (d2l's split_batch into `per_batch`
// shards: one per rank of the job, or a reproducible run's micro-shards)
// and which of them this process runs (DistributedSampler's share):
// shards [local.begin, local.end).
struct ShardLayout {
  int per_batch = 1;
  Range local{0, 1};

  // The layout of a job of `ranks` ranks, of which this process holds
  // [first_rank, first_rank + local_ranks): ShardsOfRanks' shards.
  static ShardLayout OfRanks(int per_batch, int first_rank, int local_ranks,
                             int ranks);
  // The samples of a batch of `batch` that this process's shards hold.
  Range LocalSamples(int64_t batch) const;
  // Throws std::invalid_argument, starting with `who`, unless per_batch >=
  // 1 and 0 <= local.begin <= local.end <= per_batch.
  void Check(const char* who) const;
  bool operator==(const ShardLayout& o) const {
    return per_batch == o.per_batch && local.begin == o.local.begin &&
           local.end == o.local.end;
  }
  bool operator!=(const ShardLayout& o) const { return !(*this == o); }
};

// This process's shards of one batch of the job, as the loader yields
// them: shards[i] is shard layout.local.begin + i of a batch of `size`
// samples cut by `layout`. Other processes hold the rest.
struct LocalBatch {
  int64_t size = 0;
  ShardLayout layout;
  std::vector<Shard> shards;
};

// The local shards of a batch of `size` whose local samples
// (layout.LocalSamples(size)) start at `inputs` and `targets`. Throws as
// ShardBatch.
LocalBatch CutBatch(int64_t size, const ShardLayout& layout,
                    const SampleArray& inputs, const SampleArray& targets);
// Of a batch given whole (every shard of the job, the others' with their
// counts at least), the local ones. Throws std::invalid_argument, starting
// with `who`, unless there are layout.per_batch shards.
LocalBatch LocalOf(const std::vector<Shard>& shards, const ShardLayout& layout,
                   const char* who);
// Throws std::invalid_argument, starting with `who`, unless `batch` holds
// `layout`'s local shards with ShardBatch's counts for its size, each with
// data for its count (CheckShards).
void CheckLocalBatch(const LocalBatch& batch, const ShardLayout& layout,
                     const char* who);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_SHARD_H_
