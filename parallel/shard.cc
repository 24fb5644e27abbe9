#include "parallel/shard.h"

#include <algorithm>
#include <stdexcept>

namespace ringlet::nn {
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
                                data::ToString(wanted) +
                                " samples; these are " + Describe());
  }
}

const int32_t* ClassIds(const Shard& shard, const char* who) {
  if (!shard.targets.shape.empty() ||
      shard.targets.type != ElementType::kInt32) {
    throw std::invalid_argument(
        std::string(who) +
        " takes one int32 class id a sample as targets; "
        "these are " +
        shard.targets.Describe() +
        " (give DataParallel a loss of your own for other targets)");
  }
  return static_cast<const int32_t*>(shard.targets.data);
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

}  // namespace ringlet::nn
