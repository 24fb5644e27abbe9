// ReproducibleAllReduce: the same bits for 1 to 8 ranks, every placement
// and order of the summands, every host algorithm and chunking; its
// accuracy against a float64 sum, beside a float32 ring's; non-finite
// values; refusals.
#include "collectives/reproducible/reproducible_sum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "collectives/testing/host_backends.h"
#include "collectives/testing/rank_threads.h"

namespace ringlet::collectives {
namespace {

using testing::Group;
using testing::RunRanks;
using Bytes = std::vector<unsigned char>;

using Backend = testing::HostBackend;
using testing::HostBackends;

uint16_t ToBf16(float value) {  // Round to nearest even (finite values).
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

float FromBf16(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

// Summand s: magnitudes over 2^-20 .. 2^20, both signs, and some elements
// that cancel across summands; depends on the summand and the index.
std::vector<std::vector<float>> Summands(int n, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-20, 20), sign(0, 1);
  std::vector<std::vector<float>> out(n, std::vector<float>(count));
  for (int s = 0; s < n; ++s) {
    for (size_t i = 0; i < count; ++i) {
      out[s][i] = std::ldexp(mantissa(rng), exponent(rng)) *
                  (sign(rng) != 0 ? -1.0f : 1.0f);
    }
  }
  for (size_t i = 0; i < count; i += 3) {  // Large terms that cancel.
    out[0][i] = 1e6f;
    out[n - 1][i] = -1e6f;
  }
  return out;
}

Bytes AsType(const std::vector<float>& values, DataType type) {
  Bytes out(values.size() * SizeOf(type));
  if (type == DataType::kFloat32) {
    std::memcpy(out.data(), values.data(), out.size());
  } else {
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t b = ToBf16(values[i]);
      std::memcpy(out.data() + 2 * i, &b, 2);
    }
  }
  return out;
}

// Runs the sum on `group`, rank r holding summands placement[r] in that
// order; expects every rank's result to be the same bits, returns it.
Bytes SumPlaced(Group& group, const std::vector<std::vector<int>>& placement,
                const std::vector<Bytes>& summands, size_t count,
                DataType type) {
  std::vector<Bytes> results(group.size(), Bytes(count * SizeOf(type), 0xee));
  const std::vector<std::string> errors = RunRanks(group, [&](Communicator& c) {
    std::vector<const void*> mine;
    for (int s : placement[c.rank()]) mine.push_back(summands[s].data());
    ReproducibleAllReduce(c, mine, results[c.rank()].data(), count, type);
  });
  for (size_t r = 0; r < errors.size(); ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
  }
  for (size_t r = 1; r < results.size(); ++r) {
    EXPECT_TRUE(results[r] == results[0]) << "rank " << r << " differs";
  }
  return results[0];
}

// The summands 0..n-1 cut into `ranks` contiguous runs of `order`.
std::vector<std::vector<int>> Contiguous(const std::vector<int>& order,
                                         int ranks) {
  std::vector<std::vector<int>> out(ranks);
  const size_t n = order.size();
  for (int r = 0; r < ranks; ++r) {
    for (size_t s = r * n / ranks; s < (r + 1) * n / ranks; ++s) {
      out[r].push_back(order[s]);
    }
  }
  return out;
}

class ReproducibleSumTest : public ::testing::TestWithParam<Backend> {};

void ExpectSameBitsEverywhere(const Backend& backend, DataType type) {
  constexpr int kSummands = 8;
  constexpr size_t kCount = 4099;  // Sixteen blocks and a bit.
  std::vector<Bytes> summands;
  for (const auto& s : Summands(kSummands, kCount, 7)) {
    summands.push_back(AsType(s, type));
  }
  std::vector<int> in_order(kSummands);
  std::iota(in_order.begin(), in_order.end(), 0);
  Group one = backend.make(1);
  const Bytes reference = SumPlaced(one, {in_order}, summands, kCount, type);
  std::mt19937 rng(11);
  for (int ranks = 1; ranks <= 8; ++ranks) {
    Group group = backend.make(ranks);
    std::vector<std::vector<std::vector<int>>> placements;
    placements.push_back(Contiguous(in_order, ranks));
    std::vector<int> reversed(in_order.rbegin(), in_order.rend());
    placements.push_back(Contiguous(reversed, ranks));
    std::vector<std::vector<int>> round_robin(ranks);
    for (int s = 0; s < kSummands; ++s) round_robin[s % ranks].push_back(s);
    placements.push_back(round_robin);
    for (int trial = 0; trial < 6; ++trial) {  // Any rank may hold none.
      std::vector<int> order = in_order;
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<std::vector<int>> random(ranks);
      for (int s : order) random[rng() % ranks].push_back(s);
      placements.push_back(random);
    }
    for (size_t p = 0; p < placements.size(); ++p) {
      EXPECT_TRUE(SumPlaced(group, placements[p], summands, kCount, type) ==
                  reference)
          << ranks << " ranks, placement " << p;
    }
  }
}

TEST_P(ReproducibleSumTest, Float32SameBitsForAnyRanksAndPlacement) {
  ExpectSameBitsEverywhere(GetParam(), DataType::kFloat32);
}

TEST_P(ReproducibleSumTest, BFloat16SameBitsForAnyRanksAndPlacement) {
  ExpectSameBitsEverywhere(GetParam(), DataType::kBFloat16);
}

INSTANTIATE_TEST_SUITE_P(HostAlgorithms, ReproducibleSumTest,
                         ::testing::ValuesIn(HostBackends()),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param.name;
                         });

TEST(ReproducibleSum, EveryPermutationOfFiveSummandsOverOneToFiveRanks) {
  constexpr size_t kCount = 1021;
  std::vector<Bytes> summands;
  for (const auto& s : Summands(5, kCount, 3)) {
    summands.push_back(AsType(s, DataType::kFloat32));
  }
  std::vector<int> order = {0, 1, 2, 3, 4};
  Group one = HostBackends()[0].make(1);
  const Bytes reference =
      SumPlaced(one, {order}, summands, kCount, DataType::kFloat32);
  for (int ranks = 1; ranks <= 5; ++ranks) {
    Group group = HostBackends()[1].make(ranks);
    int permutations = 0;
    std::sort(order.begin(), order.end());
    do {
      ++permutations;
      ASSERT_TRUE(SumPlaced(group, Contiguous(order, ranks), summands, kCount,
                            DataType::kFloat32) == reference)
          << ranks << " ranks, order " << order[0] << order[1] << order[2]
          << order[3] << order[4];
    } while (std::next_permutation(order.begin(), order.end()));
    EXPECT_EQ(permutations, 120);
  }
}

TEST(ReproducibleSum, CountsAroundBlocksAndRanks) {
  for (size_t count : {size_t{1}, size_t{2}, size_t{7}, size_t{255},
                       size_t{256}, size_t{257}, size_t{1025}}) {
    std::vector<Bytes> summands;
    for (const auto& s : Summands(4, count, 5)) {
      summands.push_back(AsType(s, DataType::kFloat32));
    }
    Group one = HostBackends()[0].make(1);
    Group three = HostBackends()[0].make(3);
    EXPECT_TRUE(
        SumPlaced(one, {{0, 1, 2, 3}}, summands, count, DataType::kFloat32) ==
        SumPlaced(three, {{3}, {1, 0}, {2}}, summands, count,
                  DataType::kFloat32))
        << "count " << count;
  }
}

// Two ranks holding one summand each: the ring finds each block's grid
// from the two values it combines first (no maxima pass), for counts
// around blocks, segments and chunks, with magnitudes far apart, zeros
// and non-finite values; the bits of one rank holding both, on every
// backend (those without the wire ring take the maxima path), in place too.
TEST_P(ReproducibleSumTest, TwoRanksWithOneSummandEachGiveOneRanksBits) {
  for (const DataType type : {DataType::kFloat32, DataType::kBFloat16}) {
    for (const size_t count :
         {size_t{1}, size_t{255}, size_t{257}, size_t{4099}, size_t{70001}}) {
      auto values = Summands(2, count, 23);
      for (size_t i = 0; i < count; i += 97) values[1][i] = 0.0f;
      for (size_t i = 600; i < count; i += 1000) values[0][i] *= 1e30f;
      if (count > 300) {
        values[0][300] = std::numeric_limits<float>::infinity();
        values[1][301] = std::nanf("");
      }
      const std::vector<Bytes> summands = {AsType(values[0], type),
                                           AsType(values[1], type)};
      Group one = GetParam().make(1);
      Group two = GetParam().make(2);
      const Bytes reference = SumPlaced(one, {{0, 1}}, summands, count, type);
      EXPECT_TRUE(SumPlaced(two, {{0}, {1}}, summands, count, type) ==
                  reference)
          << Name(type) << "[" << count << "]";
      EXPECT_TRUE(SumPlaced(two, {{1}, {0}}, summands, count, type) ==
                  reference)
          << Name(type) << "[" << count << "] swapped";
      std::vector<Bytes> in_place = summands;
      const std::vector<std::string> errors =
          RunRanks(two, [&](Communicator& c) {
            ReproducibleAllReduce(c, in_place[c.rank()].data(),
                                  in_place[c.rank()].data(), count, type);
          });
      EXPECT_EQ(errors, std::vector<std::string>(2, ""));
      EXPECT_TRUE(in_place[0] == reference && in_place[1] == reference)
          << Name(type) << "[" << count << "] in place";
    }
  }
}

// Two ranks of one bfloat16 summand each, in blocks whose values all lie
// on the grid (the sum is then found in float32): every kind of pair, ties
// to even included, must give the words' bits, which one rank holding both
// gets. Pairs of exponents 0-24 apart, ties (1 + 2^-8), the largest values
// overflowing, subnormals, signed zeros, infinities and NaNs.
TEST(ReproducibleSum, BFloat16PairsOnTheGridGiveTheWordsBits) {
  constexpr size_t kCount = 256 * 64;
  std::mt19937 rng(37);
  std::vector<uint16_t> a(kCount), b(kCount);
  const auto bf16 = [](int sign, int exponent, int mantissa) {
    return static_cast<uint16_t>(sign << 15 | exponent << 7 | mantissa);
  };
  for (size_t block = 0; block < kCount / 256; ++block) {
    // Each block's exponents within 24 of its largest: on the grid.
    const int top = 1 + static_cast<int>(rng() % 254);
    for (size_t i = block * 256; i < (block + 1) * 256; ++i) {
      const int ea = std::max(1, top - static_cast<int>(rng() % 25));
      const int eb = std::max(1, top - static_cast<int>(rng() % 25));
      a[i] = bf16(rng() % 2, ea, rng() % 128);
      b[i] = bf16(rng() % 2, eb, rng() % 128);
    }
  }
  const uint16_t one = bf16(0, 127, 0), tie = bf16(0, 119, 0);  // 2^-8
  const uint16_t one_and_ulp = bf16(0, 127, 1), most = bf16(0, 254, 127);
  const uint16_t inf = 0x7f80, nan = 0x7fc1, negative_zero = 0x8000;
  const std::vector<std::pair<uint16_t, uint16_t>> special = {
      {one, tie},
      {one_and_ulp, tie},
      {most, most},
      {most, bf16(0, 247, 0)},
      {negative_zero, negative_zero},
      {negative_zero, 0},
      {one, bf16(1, 127, 0)},
      {inf, one},
      {inf, bf16(1, 255, 0)},
      {nan, one},
      {bf16(0, 0, 1), bf16(0, 0, 3)},
      {bf16(0, 0, 127), bf16(0, 0, 1)},
      {bf16(1, 0, 5), bf16(0, 0, 5)}};
  // Each pair alone in a block of zeros (its own grid).
  for (size_t p = 0; p < special.size(); ++p) {
    const size_t at = (kCount / 256 - 1 - p) * 256;
    std::fill(a.begin() + at, a.begin() + at + 256, 0);
    std::fill(b.begin() + at, b.begin() + at + 256, 0);
    a[at + 7] = special[p].first;
    b[at + 7] = special[p].second;
  }
  std::vector<Bytes> summands(2, Bytes(kCount * 2));
  std::memcpy(summands[0].data(), a.data(), kCount * 2);
  std::memcpy(summands[1].data(), b.data(), kCount * 2);
  Group one_rank = HostBackends()[0].make(1);
  Group two = HostBackends()[0].make(2);
  const Bytes words =
      SumPlaced(one_rank, {{0, 1}}, summands, kCount, DataType::kBFloat16);
  const Bytes pairs =
      SumPlaced(two, {{0}, {1}}, summands, kCount, DataType::kBFloat16);
  std::vector<uint16_t> w(kCount), got(kCount);
  std::memcpy(w.data(), words.data(), words.size());
  std::memcpy(got.data(), pairs.data(), pairs.size());
  size_t wrong = 0;
  for (size_t i = 0; i < kCount; ++i) {
    if (got[i] != w[i] && wrong++ < 5) {
      ADD_FAILURE() << std::hex << "element " << std::dec << i << ": "
                    << std::hex << a[i] << " + " << b[i] << " gave " << got[i]
                    << ", the words " << w[i];
    }
  }
  EXPECT_EQ(wrong, 0u);
  // The ties went to even, the zeros' sum is +0, the largest overflowed.
  EXPECT_EQ(w[(kCount / 256 - 1) * 256 + 7], one);
  EXPECT_EQ(w[(kCount / 256 - 2) * 256 + 7], bf16(0, 127, 2));
  EXPECT_EQ(w[(kCount / 256 - 3) * 256 + 7], inf);
  EXPECT_EQ(w[(kCount / 256 - 5) * 256 + 7], 0);
}

// Calls longer than a piece (4 MiB of values) are summed piece by piece;
// the bits do not change.
TEST(ReproducibleSum, CallsOfSeveralPiecesGiveOneRanksBits) {
  for (const DataType type : {DataType::kFloat32, DataType::kBFloat16}) {
    const size_t count = (size_t{4} << 20) / SizeOf(type) + 300;
    std::vector<Bytes> summands;
    for (const auto& s : Summands(3, count, 29)) {
      summands.push_back(AsType(s, type));
    }
    Group one = HostBackends()[0].make(1);
    Group three = HostBackends()[0].make(3);
    EXPECT_TRUE(SumPlaced(one, {{0, 1, 2}}, summands, count, type) ==
                SumPlaced(three, {{2}, {0, 1}, {}}, summands, count, type))
        << Name(type);
  }
}

// What the ring puts on the wire: with two ranks of one summand each, a
// plain allreduce's bytes (values out, finished values back); with four,
// words (8 bytes) only in the two middle steps of the reduce-scatter.
TEST(ReproducibleSum, TheRingSendsWordsOnlyInItsMiddleSteps) {
  constexpr size_t kCount = 4096 * 4;
  const auto values = Summands(4, kCount, 31);
  for (const int ranks : {2, 4}) {
    Group group = HostBackends()[0].make(ranks);
    std::vector<uint64_t> sent(ranks);
    std::vector<std::vector<float>> out(ranks, std::vector<float>(kCount));
    const std::vector<std::string> errors =
        RunRanks(group, [&](Communicator& c) {
          const uint64_t before = c.stats().bytes_sent;
          ReproducibleAllReduce(c, values[c.rank()].data(),
                                out[c.rank()].data(), kCount,
                                DataType::kFloat32);
          sent[c.rank()] = c.stats().bytes_sent - before;
        });
    ASSERT_EQ(errors, std::vector<std::string>(ranks, ""));
    // A float32 ring's 2(n-1)/n of the buffer, and with four ranks the
    // middle steps' words (2 chunks of 4 more bytes per element) and the
    // blocks' maxima; the counts of summands (2 int32) go in 2(n-1) sends
    // of a chunk of at most one.
    const uint64_t plain = 2 * (ranks - 1) * kCount * 4 / ranks;
    const uint64_t words = ranks == 2 ? 0 : 2 * (kCount / 4) * 4;
    const uint64_t maxima =
        ranks == 2 ? 0 : 2 * (ranks - 1) * (kCount / 256) * 4 / ranks;
    for (int r = 0; r < ranks; ++r) {
      EXPECT_LE(sent[r], plain + words + maxima + 2 * (ranks - 1) * 4)
          << ranks << " ranks, rank " << r;
      EXPECT_GE(sent[r], plain + words) << ranks << " ranks, rank " << r;
    }
  }
}

TEST(ReproducibleSum, CountZeroTouchesNothing) {
  Group group = HostBackends()[0].make(2);
  const std::vector<std::string> errors = RunRanks(group, [](Communicator& c) {
    ReproducibleAllReduce(c, nullptr, nullptr, 0, DataType::kFloat32);
  });
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
}

// The bound of the header, checked element by element against the float64
// sum of the summands (exact here: 8 terms within 2^-20 .. 2^20 and
// cancelling 1e6 fit 53 bits), beside a float32 ring of 8 ranks.
TEST(ReproducibleSum, MoreAccurateThanAFloat32Ring) {
  constexpr int kRanks = 8;
  constexpr size_t kCount = 4099;
  const auto values = Summands(kRanks, kCount, 13);
  std::vector<Bytes> summands;
  for (const auto& s : values)
    summands.push_back(AsType(s, DataType::kFloat32));
  std::vector<std::vector<int>> placement(kRanks);
  for (int r = 0; r < kRanks; ++r) placement[r] = {r};
  Group group = HostBackends()[0].make(kRanks);
  const Bytes repro_bytes =
      SumPlaced(group, placement, summands, kCount, DataType::kFloat32);
  std::vector<float> repro(kCount), ring(kCount);
  std::memcpy(repro.data(), repro_bytes.data(), repro_bytes.size());
  std::vector<std::vector<float>> ring_out(kRanks, std::vector<float>(kCount));
  RunRanks(group, [&](Communicator& c) {
    c.AllReduce(values[c.rank()].data(), ring_out[c.rank()].data(), kCount,
                DataType::kFloat32, ReduceOp::kSum);
  });
  ring = ring_out[0];
  double repro_worst = 0, ring_worst = 0;  // In units of the bound.
  for (size_t i = 0; i < kCount; ++i) {
    double exact = 0, block_max = 0;
    for (const auto& s : values) exact += s[i];
    for (size_t j = i / kReproducibleBlock * kReproducibleBlock;
         j <
         std::min(kCount, (i / kReproducibleBlock + 1) * kReproducibleBlock);
         ++j) {
      for (const auto& s : values)
        block_max = std::max<double>(block_max, std::fabs(s[j]));
    }
    const float nearest = static_cast<float>(exact);
    const double half_ulp =
        std::fabs(std::nextafter(nearest, INFINITY) - nearest) / 2;
    const double bound = half_ulp + kRanks * block_max * std::ldexp(1.0, -33);
    ASSERT_LE(std::fabs(repro[i] - exact), bound) << "element " << i;
    repro_worst = std::max(repro_worst, std::fabs(repro[i] - exact) / bound);
    ring_worst = std::max(ring_worst, std::fabs(ring[i] - exact) / bound);
  }
  EXPECT_LT(repro_worst, ring_worst);
  std::printf(
      "worst error in units of the bound: reproducible %.3g, "
      "float32 ring %.3g\n",
      repro_worst, ring_worst);
}

TEST(ReproducibleSum, BFloat16RoundsTheExactSumOnceToNearestEven) {
  // 1 + 2^-8 lies halfway between bfloat16's 1 and 1 + 2^-7: even is 1.
  // 1 + 3 * 2^-9 rounds up to 1 + 2^-7. 1 + 2^-8 + 2^-30 is just above the
  // tie (rounding through float32 first would make it the tie, then 1).
  // In the next block (its own grid), 2^127 * 1.9921875 twice overflows.
  const size_t count = kReproducibleBlock + 1;
  std::vector<float> a(count, 0.0f), b(count, 0.0f), c(count, 0.0f);
  a[0] = a[1] = a[2] = 1.0f;
  b[0] = b[2] = std::ldexp(1.0f, -8);
  b[1] = std::ldexp(3.0f, -9);
  c[2] = std::ldexp(1.0f, -30);
  a[count - 1] = b[count - 1] = std::ldexp(1.9921875f, 127);
  std::vector<Bytes> summands = {AsType(a, DataType::kBFloat16),
                                 AsType(b, DataType::kBFloat16),
                                 AsType(c, DataType::kBFloat16)};
  // The values are bfloat16 already (3 * 2^-9 included).
  ASSERT_EQ(FromBf16(ToBf16(b[1])), b[1]);
  Group group = HostBackends()[0].make(2);
  const Bytes out =
      SumPlaced(group, {{0, 2}, {1}}, summands, count, DataType::kBFloat16);
  std::vector<uint16_t> bits(count);
  std::memcpy(bits.data(), out.data(), out.size());
  EXPECT_EQ(FromBf16(bits[0]), 1.0f);
  EXPECT_EQ(FromBf16(bits[1]), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(FromBf16(bits[2]), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_TRUE(std::isinf(FromBf16(bits[count - 1])));
}

// Where a summand is inf or NaN the element is IEEE's sum (it does not
// depend on order); the rest of its block is what it would have been.
TEST(ReproducibleSum, NonFiniteValuesGiveTheIeeeSumAndSpareTheirBlock) {
  constexpr size_t kCount = 64;
  auto values = Summands(3, kCount, 17);
  const float inf = std::numeric_limits<float>::infinity();
  auto finite = values;
  values[0][5] = inf;
  finite[0][5] = 0;
  values[1][6] = inf;
  values[2][6] = -inf;
  finite[1][6] = finite[2][6] = 0;
  values[2][7] = std::nanf("");
  finite[2][7] = 0;
  std::vector<Bytes> with, without;
  for (int s = 0; s < 3; ++s) {
    with.push_back(AsType(values[s], DataType::kFloat32));
    without.push_back(AsType(finite[s], DataType::kFloat32));
  }
  Group group = HostBackends()[0].make(2);
  const Bytes a =
      SumPlaced(group, {{0, 2}, {1}}, with, kCount, DataType::kFloat32);
  const Bytes b =
      SumPlaced(group, {{2}, {1, 0}}, with, kCount, DataType::kFloat32);
  EXPECT_TRUE(a == b);
  const Bytes c =
      SumPlaced(group, {{0, 2}, {1}}, without, kCount, DataType::kFloat32);
  std::vector<float> got(kCount), expected(kCount);
  std::memcpy(got.data(), a.data(), a.size());
  std::memcpy(expected.data(), c.data(), c.size());
  EXPECT_EQ(got[5], inf);
  EXPECT_TRUE(std::isnan(got[6]));
  EXPECT_TRUE(std::isnan(got[7]));
  for (size_t i = 0; i < kCount; ++i) {
    if (i < 5 || i > 7) {
      EXPECT_EQ(got[i], expected[i]) << i;
    }
  }
}

TEST(ReproducibleSum, InPlaceIntoASummand) {
  auto values = Summands(2, 100, 19);
  std::vector<Bytes> summands = {AsType(values[0], DataType::kFloat32),
                                 AsType(values[1], DataType::kFloat32)};
  Group one = HostBackends()[0].make(1);
  const Bytes expected =
      SumPlaced(one, {{0, 1}}, summands, 100, DataType::kFloat32);
  ReproducibleAllReduce(*one[0], {summands[0].data(), summands[1].data()},
                        summands[0].data(), 100, DataType::kFloat32);
  EXPECT_TRUE(summands[0] == expected);
}

TEST(ReproducibleSum, RefusesOtherTypesNullBuffersAndTooManySummands) {
  Group one = HostBackends()[0].make(1);
  float x = 1, y = 0;
  EXPECT_THROW(ReproducibleAllReduce(*one[0], &x, &y, 1, DataType::kFloat64),
               std::invalid_argument);
  EXPECT_THROW(
      ReproducibleAllReduce(*one[0], &x, nullptr, 1, DataType::kFloat32),
      std::invalid_argument);
  EXPECT_THROW(ReproducibleAllReduce(*one[0], std::vector<const void*>{nullptr},
                                     &y, 1, DataType::kFloat32),
               std::invalid_argument);
  const std::vector<const void*> many(kMaxReproducibleSummands + 1, &x);
  try {
    ReproducibleAllReduce(*one[0], many, &y, 1, DataType::kFloat32);
    ADD_FAILURE() << "no error for too many summands";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("1048576"), std::string::npos)
        << e.what();
  }
  // At the limit it sums exactly: 2^20 ones.
  const std::vector<const void*> most(kMaxReproducibleSummands, &x);
  ReproducibleAllReduce(*one[0], most, &y, 1, DataType::kFloat32);
  EXPECT_EQ(y, 1048576.0f);
}

}  // namespace
}  // namespace ringlet::collectives
