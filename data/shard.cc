#include "data/shard.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ringlet::data {
namespace {

void CheckShape(const std::vector<int64_t>& shape, const char* who,
                const char* what) {
  for (int64_t d : shape) {
    if (d < 0) {
      throw std::invalid_argument(std::string(who) + ": the " + what +
                                  "' shape has a negative dimension");
    }
  }
}

}  // namespace

SampleArray SampleArray::From(int64_t first) const {
  SampleArray out = *this;
  if (data != nullptr) {
    out.data = static_cast<const char*>(data) + first * bytes();
  }
  return out;
}

void SampleArray::CheckType(ElementType wanted, const char* who) const {
  if (type != wanted) {
    throw std::invalid_argument(std::string(who) + " takes " +
                                ToString(wanted) + " samples; these are " +
                                Describe());
  }
}

const int32_t* ClassIds(const Shard& shard, const char* who,
                        std::vector<int32_t>* storage) {
  const ElementType type = shard.targets.type;
  if (!shard.targets.shape.empty() ||
      (type != ElementType::kInt32 && type != ElementType::kUint8 &&
       type != ElementType::kInt64)) {
    throw std::invalid_argument(
        std::string(who) +
        " takes one class id a sample (uint8, int32 or int64) as targets; "
        "these are " +
        shard.targets.Describe() +
        " (give DataParallel a loss of your own for other targets)");
  }
  if (type == ElementType::kInt32) {
    return static_cast<const int32_t*>(shard.targets.data);
  }
  storage->resize(static_cast<size_t>(shard.count));
  if (type == ElementType::kUint8) {
    const auto* ids = static_cast<const uint8_t*>(shard.targets.data);
    std::copy(ids, ids + shard.count, storage->begin());
    return storage->data();
  }
  const auto* ids = static_cast<const int64_t*>(shard.targets.data);
  for (int64_t i = 0; i < shard.count; ++i) {
    if (ids[i] < 0 || ids[i] > INT32_MAX) {
      throw std::invalid_argument(std::string(who) + ": class id " +
                                  std::to_string(ids[i]) + " of sample " +
                                  std::to_string(i) + " is not in [0, 2^31)");
    }
    (*storage)[i] = static_cast<int32_t>(ids[i]);
  }
  return storage->data();
}

std::vector<Shard> ShardBatch(const Shard& batch, int shards) {
  if (shards < 1 || batch.count < 0) {
    throw std::invalid_argument(
        "split into shards: " + std::to_string(batch.count) + " samples into " +
        std::to_string(shards) + " shards (need samples >= 0, shards >= 1)");
  }
  CheckShape(batch.inputs.shape, "split into shards", "inputs");
  CheckShape(batch.targets.shape, "split into shards", "targets");
  std::vector<Shard> out;
  out.reserve(shards);
  int64_t begin = 0;
  for (int d = 0; d < shards; ++d) {
    Shard shard;
    shard.count = batch.count / shards + (d < batch.count % shards);
    shard.inputs = batch.inputs.From(begin);
    shard.targets = batch.targets.From(begin);
    if (shard.count == 0) {  // Nothing past the batch.
      shard.inputs.data = nullptr;
      shard.targets.data = nullptr;
    }
    out.push_back(shard);
    begin += shard.count;
  }
  return out;
}

Range SamplesOfShards(int64_t batch, int shards, int first, int end) {
  // Shard d holds batch / shards samples, one more for d < batch % shards.
  const auto start = [&](int64_t d) {
    return d * (batch / shards) + std::min<int64_t>(d, batch % shards);
  };
  return {start(first), start(end)};
}

Range ShardsOfRanks(int shards, int first_rank, int local_ranks, int ranks) {
  const int64_t s = shards;
  return {first_rank * s / ranks, (first_rank + local_ranks) * s / ranks};
}

void CheckShards(const std::vector<Shard>& shards, const char* who, int first) {
  for (size_t r = 0; r < shards.size(); ++r) {
    const Shard& s = shards[r];
    const std::string at =
        std::string(who) + ": shard " + std::to_string(first + r);
    if (s.count < 0 || (s.count > 0 && (!s.inputs.data || !s.targets.data))) {
      throw std::invalid_argument(at + " has count " + std::to_string(s.count) +
                                  " and missing inputs or targets");
    }
    CheckShape(s.inputs.shape, at.c_str(), "inputs");
    CheckShape(s.targets.shape, at.c_str(), "targets");
  }
}

ShardLayout ShardLayout::OfRanks(int per_batch, int first_rank, int local_ranks,
                                 int ranks) {
  return {per_batch, ShardsOfRanks(per_batch, first_rank, local_ranks, ranks)};
}

Range ShardLayout::LocalSamples(int64_t batch) const {
  return SamplesOfShards(batch, per_batch, static_cast<int>(local.begin),
                         static_cast<int>(local.end));
}

void ShardLayout::Check(const char* who) const {
  if (per_batch < 1 || local.begin < 0 || local.end < local.begin ||
      local.end > per_batch) {
    throw std::invalid_argument(
        std::string(who) + ": shards [" + std::to_string(local.begin) + ", " +
        std::to_string(local.end) + ") of " + std::to_string(per_batch) +
        " a batch is not a layout (need 0 <= begin <= end <= shards >= 1)");
  }
}

LocalBatch CutBatch(int64_t size, const ShardLayout& layout,
                    const SampleArray& inputs, const SampleArray& targets) {
  layout.Check("cut a batch");
  if (size < 0) {
    throw std::invalid_argument("cut a batch: " + std::to_string(size) +
                                " samples");
  }
  LocalBatch out;
  out.size = size;
  out.layout = layout;
  int64_t at = 0;  // Local samples before shard i.
  for (int64_t i = layout.local.begin; i < layout.local.end; ++i) {
    const Range r = SamplesOfShards(size, layout.per_batch, static_cast<int>(i),
                                    static_cast<int>(i + 1));
    Shard shard;
    shard.count = r.end - r.begin;
    shard.inputs = inputs.From(at);
    shard.targets = targets.From(at);
    if (shard.count == 0) {  // Nothing past the batch.
      shard.inputs.data = nullptr;
      shard.targets.data = nullptr;
    }
    out.shards.push_back(shard);
    at += shard.count;
  }
  return out;
}

LocalBatch LocalOf(const std::vector<Shard>& shards, const ShardLayout& layout,
                   const char* who) {
  if (static_cast<int64_t>(shards.size()) != layout.per_batch) {
    throw std::invalid_argument(
        std::string(who) + ": got " + std::to_string(shards.size()) +
        " shards for a batch cut into " + std::to_string(layout.per_batch) +
        " (one per device of the job, or the micro-shards)");
  }
  layout.Check(who);
  LocalBatch out;
  out.layout = layout;
  for (const Shard& s : shards) out.size += std::max<int64_t>(0, s.count);
  out.shards.assign(shards.begin() + layout.local.begin,
                    shards.begin() + layout.local.end);
  return out;
}

void CheckLocalBatch(const LocalBatch& batch, const ShardLayout& layout,
                     const char* who) {
  const std::string w(who);
  if (batch.layout != layout) {
    throw std::invalid_argument(
        w + ": a batch of shards [" + std::to_string(batch.layout.local.begin) +
        ", " + std::to_string(batch.layout.local.end) + ") of " +
        std::to_string(batch.layout.per_batch) + ", where this process runs [" +
        std::to_string(layout.local.begin) + ", " +
        std::to_string(layout.local.end) + ") of " +
        std::to_string(layout.per_batch) +
        "; load it with this layout (BatchLoader's LoaderOptions::layout)");
  }
  const int64_t local = layout.local.end - layout.local.begin;
  if (static_cast<int64_t>(batch.shards.size()) != local) {
    throw std::invalid_argument(
        w + ": got " + std::to_string(batch.shards.size()) +
        " local shards for a layout of " + std::to_string(local));
  }
  if (batch.size < 0) {
    throw std::invalid_argument(w + ": a batch of " +
                                std::to_string(batch.size) + " samples");
  }
  for (int64_t i = 0; i < local; ++i) {
    const int64_t shard = layout.local.begin + i;
    const Range want =
        SamplesOfShards(batch.size, layout.per_batch, static_cast<int>(shard),
                        static_cast<int>(shard + 1));
    if (batch.shards[i].count != want.end - want.begin) {
      throw std::invalid_argument(
          w + ": shard " + std::to_string(shard) + " of a batch of " +
          std::to_string(batch.size) + " cut into " +
          std::to_string(layout.per_batch) + " holds " +
          std::to_string(want.end - want.begin) + " samples, not " +
          std::to_string(batch.shards[i].count) +
          " (cut batches with ShardBatch's arithmetic)");
    }
  }
  CheckShards(batch.shards, who, static_cast<int>(layout.local.begin));
}

}  // namespace ringlet::data
