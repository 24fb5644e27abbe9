// The per-element arithmetic of the reproducible sum (reproducible_sum.h),
// written once for the CPU and for CUDA kernels, so the GPU's words and
// results are the CPU's to the bit: integer and float64 operations only,
// each exact or rounded once to nearest even, no library calls.
//
//   grid   a block whose largest finite magnitude m has m < 2^e holds its
//          summands as integer counts of 2^q, q = e - kGridBits: value * 2^-q
//          (exact) rounded to an integer. Counts are below 2^33 in
//          magnitude, and up to kMaxReproducibleSummands of them add up
//          exactly in float64 (below 2^53): any order, any algorithm.
//   word   a float64 holding such an integer (or a sum of them); infinities
//          and NaNs pass through as themselves, so the IEEE sum's answer
//          for them does not depend on order either.
//   finish word * 2^q (exact) rounded once, to nearest even, into float32
//          or bfloat16; every NaN leaves as one quiet NaN.
// Every product here is exact (a power of two times a value that fits), so
// a compiler that fuses a product and a sum into one FMA (nvcc does by
// default) gets the same bits.
#ifndef RINGLET_COLLECTIVES_REPRODUCIBLE_GRID_ARITHMETIC_H_
#define RINGLET_COLLECTIVES_REPRODUCIBLE_GRID_ARITHMETIC_H_

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define RINGLET_GRID_FN __host__ __device__ inline
#else
#define RINGLET_GRID_FN inline
#endif

namespace ringlet::collectives::grid {

// Bits of the grid below the block's largest magnitude: 53 (float64's
// significand) less the 20 of headroom for 2^20 summands.
inline constexpr int kGridBits = 33;
inline constexpr int kHeadroomBits = 53 - kGridBits;

// Adding and subtracting 1.5 * 2^52 rounds a double below 2^51 in
// magnitude to an integer, to nearest even (the default rounding mode;
// ringlet never builds with -ffast-math, which would fold it away).
inline constexpr double kRoundToInteger = 6755399441055744.0;

template <typename To, typename From>
RINGLET_GRID_FN To BitCast(From from) {
  static_assert(sizeof(To) == sizeof(From));
#ifdef __CUDA_ARCH__
  union {
    From from;
    To to;
  } bits{from};  // nvcc defines reading the other member.
  return bits.to;
#else
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
#endif
}

// 2^k as a double, for -1022 <= k <= 1023.
RINGLET_GRID_FN double PowerOfTwo(int k) {
  return BitCast<double>(static_cast<uint64_t>(1023 + k) << 52);
}

// A float32's or bfloat16's bits (bfloat16: the upper half of float32's).
RINGLET_GRID_FN float Float32Value(uint32_t bits) {
  return BitCast<float>(bits);
}
RINGLET_GRID_FN float BFloat16Value(uint16_t bits) {
  return BitCast<float>(static_cast<uint32_t>(bits) << 16);
}

// |value|'s bits where value is finite, else 0: a non-negative int32 that
// orders as the magnitudes do (maxima of it vectorise; float maxima do not,
// NaN's rules being what they are).
RINGLET_GRID_FN int32_t FiniteMagnitudeBits(float value) {
  const int32_t magnitude = BitCast<int32_t>(value) & 0x7fffffff;
  return magnitude < 0x7f800000 ? magnitude : 0;
}

struct Grid {
  double scale = 1;  // 2^-q: a value times scale is its count of 2^q.
  double unit = 1;   // 2^q.
};

// The grid of a block whose largest finite magnitude has bits
// `magnitude_bits` (0: only zeros and non-finite values; any grid will do).
RINGLET_GRID_FN Grid GridFor(int32_t magnitude_bits) {
  if (magnitude_bits <= 0) return Grid{};
  const int biased = magnitude_bits >> 23;
  int e;  // The least e with m < 2^e.
  if (biased > 0) {
    e = biased - 126;
  } else {  // Subnormal: m = mantissa * 2^-149.
    int width = 0;
    for (int32_t m = magnitude_bits; m != 0; m >>= 1) ++width;
    e = width - 149;
  }
  const int q = e - kGridBits;
  return Grid{PowerOfTwo(-q), PowerOfTwo(q)};
}

// value's count of the grid's unit, as a word.
RINGLET_GRID_FN double ToWord(float value, double scale) {
  const double scaled = static_cast<double>(value) * scale;
  return (scaled + kRoundToInteger) - kRoundToInteger;
}

// word * unit rounded once to float32; any NaN as the one quiet NaN.
RINGLET_GRID_FN uint32_t FinishFloat32(double word, double unit) {
  const uint32_t bits = BitCast<uint32_t>(static_cast<float>(word * unit));
  return (bits & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : bits;
}

// word * unit rounded once, to nearest even, to bfloat16 (8 significant
// bits, float32's exponent range, subnormals included); any NaN as 0x7fc0.
// Adding and subtracting 1.5 * 2^(e+45), where 2^e is the power of two at
// or below the magnitude (at least 2^-126, bfloat16's least normal, whose
// spacing its subnormals keep; at most 2^127), rounds the magnitude to a
// multiple of 2^(e-7). That has 8 significant bits, so the conversion to
// float is exact (or overflows to infinity, as bfloat16 would). Selects,
// not branches: the CPU's loop vectorises.
RINGLET_GRID_FN uint16_t FinishBFloat16(double word, double unit) {
  constexpr uint64_t kSign = uint64_t{1} << 63;
  constexpr uint64_t kExponent = uint64_t{0x7ff} << 52;
  constexpr uint64_t kLeast = uint64_t{1023 - 126} << 52;
  constexpr uint64_t kMost = uint64_t{1023 + 127} << 52;
  const uint64_t bits = BitCast<uint64_t>(word * unit);
  const uint64_t magnitude_bits = bits & ~kSign;
  uint64_t power_bits = magnitude_bits & kExponent;
  power_bits = power_bits > kLeast ? power_bits : kLeast;
  power_bits = power_bits < kMost ? power_bits : kMost;
  const double shift = BitCast<double>(power_bits) * 0x1.8p45;
  const double rounded = (BitCast<double>(magnitude_bits) + shift) - shift;
  const double signed_rounded =
      BitCast<double>(BitCast<uint64_t>(rounded) | (bits & kSign));
  uint32_t out = BitCast<uint32_t>(static_cast<float>(signed_rounded));
  out = (out & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : out;
  return static_cast<uint16_t>(out >> 16);
}

}  // namespace ringlet::collectives::grid

#endif  // RINGLET_COLLECTIVES_REPRODUCIBLE_GRID_ARITHMETIC_H_
