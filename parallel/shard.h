// Shards are data's (data/shard.h): the loader cuts them, the engine runs
// them. parallel/ and its users name them in nn:: as well.
#ifndef RINGLET_PARALLEL_SHARD_H_
#define RINGLET_PARALLEL_SHARD_H_

#include "data/shard.h"

namespace ringlet::nn {

using data::CheckLocalBatch;
using data::CheckShards;
using data::ClassIds;
using data::CutBatch;
using data::ElementType;
using data::ElementTypeOf;
using data::LocalBatch;
using data::LocalOf;
using data::Range;
using data::SampleArray;
using data::SamplesOf;
using data::SamplesOfShards;
using data::Shard;
using data::ShardBatch;
using data::ShardLayout;
using data::ShardsOfRanks;

}  // namespace ringlet::nn

#endif  // RINGLET_PARALLEL_SHARD_H_
