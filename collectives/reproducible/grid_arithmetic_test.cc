// The reproducible sum's per-element arithmetic against references written
// the obvious way (libm's frexp, exact midpoints): the CPU's half of the
// CPU/GPU twin, whose GPU half runs the same functions.
#include "collectives/reproducible/grid_arithmetic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace ringlet::collectives::grid {
namespace {

float FromBits(uint32_t bits) { return BitCast<float>(bits); }

// The grid's unit the way the header defines it: m < 2^e, unit 2^(e-33).
double ReferenceUnit(float m) {
  int e;
  std::frexp(m, &e);
  return std::ldexp(1.0, e - kGridBits);
}

TEST(GridArithmetic, GridForEveryExponentAndSubnormalWidth) {
  std::mt19937 rng(1);
  for (uint32_t biased = 0; biased < 255; ++biased) {
    for (int trial = 0; trial < 64; ++trial) {
      uint32_t mantissa = rng() & 0x7fffff;
      if (biased == 0) mantissa >>= trial % 23;  // Every bit length.
      if (biased == 0 && mantissa == 0) mantissa = 1;
      const uint32_t bits = biased << 23 | mantissa;
      const Grid grid = GridFor(static_cast<int32_t>(bits));
      const double unit = ReferenceUnit(FromBits(bits));
      ASSERT_EQ(grid.unit, unit) << std::hex << bits;
      ASSERT_EQ(grid.scale, 1.0 / unit) << std::hex << bits;
    }
  }
  EXPECT_EQ(GridFor(0).unit, 1.0);
}

TEST(GridArithmetic, ToWordRoundsToNearestEvenCountOfTheUnit) {
  const Grid grid = GridFor(static_cast<int32_t>(BitCast<uint32_t>(1.0f)));
  ASSERT_EQ(grid.unit, std::ldexp(1.0, 1 - kGridBits));
  // 1 is 2^32 units; 2^-33 is half a unit: to even (0); 3 * 2^-33 is
  // one and a half: to 2.
  EXPECT_EQ(ToWord(1.0f, grid.scale), std::ldexp(1.0, 32));
  EXPECT_EQ(ToWord(std::ldexp(1.0f, -33), grid.scale), 0.0);
  EXPECT_EQ(ToWord(std::ldexp(3.0f, -33), grid.scale), 2.0);
  EXPECT_EQ(ToWord(-std::ldexp(3.0f, -33), grid.scale), -2.0);
  EXPECT_TRUE(
      std::isinf(ToWord(std::numeric_limits<float>::infinity(), grid.scale)));
  EXPECT_TRUE(std::isnan(ToWord(std::nanf(""), grid.scale)));
}

TEST(GridArithmetic, FinishFloat32RoundsOnceAndQuietsNaNs) {
  std::mt19937_64 rng(2);
  for (int i = 0; i < 1000000; ++i) {
    const double word = static_cast<double>(static_cast<int64_t>(rng() >> 11)) *
                        ((rng() & 1) ? 1 : -1);
    const double unit = std::ldexp(1.0, static_cast<int>(rng() % 200) - 180);
    const float expected = static_cast<float>(word * unit);
    ASSERT_EQ(FinishFloat32(word, unit), BitCast<uint32_t>(expected));
  }
  EXPECT_EQ(FinishFloat32(-std::numeric_limits<double>::quiet_NaN(), 1.0),
            0x7fc00000u);
}

// The nearest bfloat16 to x, ties to even, by exact comparison with the
// midpoint of the two neighbours (a double holds it exactly).
uint16_t ReferenceBf16(double x) {
  if (std::isnan(x)) return 0x7fc0;
  const bool negative = std::signbit(x);
  const double a = std::fabs(x);
  // The largest bfloat16 magnitude at or below a, by bits.
  uint32_t lo = 0;
  for (int bit = 14; bit >= 0; --bit) {
    const uint32_t trial = lo | (1u << bit);
    if (trial <= 0x7f80 && BitCast<float>(trial << 16) <= a) lo = trial;
  }
  uint16_t out = static_cast<uint16_t>(lo);
  if (lo < 0x7f80) {
    const double low = BitCast<float>(lo << 16);
    const double high =
        lo + 1 == 0x7f80 ? std::ldexp(1.0, 128)
                         : static_cast<double>(BitCast<float>((lo + 1) << 16));
    const double mid = (low + high) / 2;
    if (a > mid || (a == mid && (lo & 1) != 0)) out = lo + 1;
  }
  return negative ? out | 0x8000 : out;
}

TEST(GridArithmetic, FinishBFloat16MatchesTheNearestEvenReference) {
  std::mt19937_64 rng(3);
  int checked = 0;
  for (int i = 0; i < 2000000; ++i) {
    uint64_t bits = rng();
    // Exponents around float's range, subnormals and overflow included.
    const uint64_t exponent = 1023 - 150 + rng() % 290;
    bits = (bits & 0x800fffffffffffffull) | exponent << 52;
    // Every third: low bits cleared, for ties and values just off them.
    if (i % 3 == 0) bits &= ~((uint64_t{1} << (rng() % 52)) - 1);
    const double x = BitCast<double>(bits);
    ASSERT_EQ(FinishBFloat16(x, 1.0), ReferenceBf16(x)) << std::hexfloat << x;
    ++checked;
  }
  for (const double x :
       {0.0, -0.0, std::ldexp(1.0, -133), std::ldexp(1.5, -134),
        std::ldexp(1.0, -134), std::ldexp(1.0 + std::ldexp(1.0, -8), 0),
        1.0 + std::ldexp(3.0, -9), std::ldexp(1.9921875, 127),
        std::ldexp(1.99609375, 127), 1e39, -1e39,
        std::numeric_limits<double>::infinity()}) {
    EXPECT_EQ(FinishBFloat16(x, 1.0), ReferenceBf16(x)) << std::hexfloat << x;
  }
  EXPECT_EQ(FinishBFloat16(std::numeric_limits<double>::quiet_NaN(), 1.0),
            0x7fc0);
  EXPECT_EQ(checked, 2000000);
}

}  // namespace
}  // namespace ringlet::collectives::grid
