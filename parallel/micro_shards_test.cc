#include "parallel/micro_shards.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/testing/rank_threads.h"

namespace ringlet::parallel {
namespace {

using collectives::Communicator;
using collectives::DataType;

using collectives::testing::RunRanks;

TEST(MicroShards, EveryMicroShardHasOneRankAndEveryRankOne) {
  for (int m = 1; m <= 12; ++m) {
    for (int ranks = 1; ranks <= m; ++ranks) {
      int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const data::Range range = data::ShardsOfRanks(m, r, 1, ranks);
        EXPECT_EQ(range.begin, next) << m << " " << ranks << " " << r;
        EXPECT_GT(range.end, range.begin) << m << " " << ranks << " " << r;
        next = range.end;
      }
      EXPECT_EQ(next, m);
    }
  }
}

TEST(MicroShards, MoreRanksThanMicroShardsSaysWhatToGive) {
  EXPECT_NO_THROW(CheckMicroShards(8, 8, "t"));
  try {
    CheckMicroShards(8, 9, "resnet_dp");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--micro_shards=9"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(CheckMicroShards(0, 1, "t"), std::invalid_argument);
  EXPECT_THROW(CheckMicroShards(4097, 1, "t"), std::invalid_argument);
}

// Four micro-shards' gradients (two tensors each) whose values differ in
// magnitude by 2^40: summed by 1, 2, 3 or 4 ranks, the same bits.
std::vector<float> SumOver(int ranks, DataType wire) {
  constexpr int kMicro = 4;
  auto group = collectives::CreateGroup("ring", ranks);
  std::vector<std::vector<float>> results(ranks);
  const auto errors = RunRanks(group, [&](Communicator& comm) {
    ReproducibleGradients grads(wire);
    nn::Tensor a({3, 5}), b({7});
    const data::Range mine = data::ShardsOfRanks(kMicro, comm.rank(), 1, ranks);
    for (int64_t s = mine.begin; s < mine.end; ++s) {
      for (int64_t i = 0; i < a.numel(); ++i) {
        a.data()[i] = std::ldexp(1.0f + 0.37f * s + 0.01f * i, s * 13 - 20);
      }
      for (int64_t i = 0; i < b.numel(); ++i) {
        b.data()[i] = (s % 2 ? -1.0f : 1.0f) / (3.0f + s + i);
      }
      grads.Add({&a, &b});
    }
    grads.SumInto(comm, {&a, &b});
    std::vector<float>& out = results[comm.rank()];
    out.assign(a.data(), a.data() + a.numel());
    out.insert(out.end(), b.data(), b.data() + b.numel());
  });
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  for (int r = 1; r < ranks; ++r) EXPECT_EQ(results[r], results[0]);
  return results[0];
}

TEST(ReproducibleGradients, SameBitsOnOneToFourRanks) {
  for (DataType wire : {DataType::kFloat32, DataType::kBFloat16}) {
    const std::vector<float> one = SumOver(1, wire);
    for (int ranks = 2; ranks <= 4; ++ranks) {
      const std::vector<float> got = SumOver(ranks, wire);
      EXPECT_EQ(std::memcmp(got.data(), one.data(), one.size() * 4), 0)
          << ranks << " ranks, wire " << collectives::Name(wire);
    }
    // Element 0 of b: 1/3 - 1/4 + 1/5 - 1/6 (a float32 sum would be close).
    EXPECT_NEAR(one[15], 1.0 / 3 - 1.0 / 4 + 1.0 / 5 - 1.0 / 6,
                wire == DataType::kFloat32 ? 1e-7 : 2e-3);
  }
}

TEST(ReproducibleGradients, RefusesAWireOtherThanFloat32OrBFloat16) {
  EXPECT_THROW(ReproducibleGradients(DataType::kFloat64),
               std::invalid_argument);
}

// Running statistics: micro-shard s's forward moves the buffer from its
// starting 1.0 to 1.0 + s; whoever records it, the result is the mean over
// the used slots (slot 2 is an empty micro-shard here), and each Record
// puts the starting value back.
std::vector<float> BuffersOver(int ranks) {
  constexpr int kMicro = 4;
  const std::vector<char> used = {1, 1, 0, 1};
  auto group = collectives::CreateGroup("ring", ranks);
  std::vector<std::vector<float>> results(ranks);
  const auto errors = RunRanks(group, [&](Communicator& comm) {
    nn::Tensor mean({2}), var({1});
    mean.data()[0] = mean.data()[1] = var.data()[0] = 1.0f;
    MicroShardBuffers buffers({&mean, &var});
    buffers.Begin(kMicro);
    const data::Range mine = data::ShardsOfRanks(kMicro, comm.rank(), 1, ranks);
    for (int64_t s = mine.begin; s < mine.end; ++s) {
      if (!used[s]) continue;
      EXPECT_EQ(mean.data()[0], 1.0f) << "not restored before " << s;
      mean.data()[0] += s;
      mean.data()[1] = -0.0f;
      var.data()[0] = 0.1f * s;
      buffers.Record(s);
    }
    buffers.Finish(comm, used);
    results[comm.rank()] = {mean.data()[0], mean.data()[1], var.data()[0]};
  });
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  for (int r = 1; r < ranks; ++r) EXPECT_EQ(results[r], results[0]);
  return results[0];
}

TEST(MicroShardBuffers, MeanOfTheUsedSlotsOnAnyNumberOfRanks) {
  const std::vector<float> one = BuffersOver(1);
  EXPECT_EQ(one[0], static_cast<float>((1.0 + 2.0 + 4.0) / 3));
  EXPECT_FALSE(std::signbit(one[1]));  // -0 everywhere becomes +0.
  EXPECT_EQ(one[2], static_cast<float>((0.0 + 0.1f + 0.3f) / 3));
  for (int ranks = 2; ranks <= 4; ++ranks) {
    const std::vector<float> got = BuffersOver(ranks);
    EXPECT_EQ(std::memcmp(got.data(), one.data(), one.size() * 4), 0)
        << ranks << " ranks";
  }
}

}  // namespace
}  // namespace ringlet::parallel
