// The SIMD kernels against plain loops: every type and op, counts around
// the vector widths, misaligned pointers, streaming and cached stores.
#include "collectives/transport/host/host_kernels.h"

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "collectives/transport/host/bf16_kernels.h"

namespace ringlet::collectives::host {
namespace {

template <typename T>
T Reference(T a, T b, ReduceOp op, int divisor) {
  switch (op) {
    case ReduceOp::kSum:
      return a + b;
    case ReduceOp::kAvg:
      return divisor > 0 ? static_cast<T>((a + b) / static_cast<T>(divisor))
                         : a + b;
    case ReduceOp::kMax:
      return a > b ? a : b;
    case ReduceOp::kMin:
      return a < b ? a : b;
  }
  return 0;
}

template <typename T>
void CheckCombine(DataType type) {
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
    for (int divisor : {0, 3}) {
      for (bool streaming : {false, true}) {
        for (size_t count : {0, 1, 3, 4, 7, 8, 9, 16, 17, 63, 200}) {
          for (size_t shift : {0, 1, 3}) {  // Element offsets: misaligned.
            std::vector<T> a(count + 8), b(count + 8), dst(count + 8, 0);
            for (size_t i = 0; i < a.size(); ++i) {
              a[i] = static_cast<T>(static_cast<int>(i * 37 % 101) - 50);
              b[i] = static_cast<T>(static_cast<int>(i * 53 % 89) - 40);
            }
            CombineInto(dst.data() + shift, a.data() + shift, b.data() + shift,
                        count, type, op, divisor, streaming);
            for (size_t i = 0; i < count; ++i) {
              ASSERT_EQ(dst[shift + i],
                        Reference(a[shift + i], b[shift + i], op, divisor))
                  << Name(type) << " " << Name(op) << " count " << count
                  << " shift " << shift << " i " << i
                  << (streaming ? " streaming" : "");
            }
            EXPECT_EQ(dst[shift + count], 0) << "wrote past the end";
          }
        }
      }
    }
  }
}

TEST(HostKernels, CombineFloat32) { CheckCombine<float>(DataType::kFloat32); }
TEST(HostKernels, CombineFloat64) { CheckCombine<double>(DataType::kFloat64); }
TEST(HostKernels, CombineInt32) { CheckCombine<int32_t>(DataType::kInt32); }

TEST(HostKernels, CombineInPlace) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> b = {9, 8, 7, 6, 5, 4, 3, 2, 1};
  CombineInto(a.data(), a.data(), b.data(), a.size(), DataType::kFloat32,
              ReduceOp::kSum, 0, false);
  for (float v : a) EXPECT_EQ(v, 10.0f);
}

TEST(HostKernels, IntegerSumWrapsLikeTheHardware) {
  const int32_t a[5] = {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
  const int32_t b[5] = {1, 1, 1, 1, 1};
  int32_t dst[5];
  CombineInto(dst, a, b, 5, DataType::kInt32, ReduceOp::kSum, 0, false);
  for (int32_t v : dst) EXPECT_EQ(v, INT32_MIN);  // Vector lanes and tail.
}

TEST(HostKernels, CopyStreamingAndCached) {
  for (bool streaming : {false, true}) {
    for (size_t bytes : {0, 1, 15, 16, 63, 64, 65, 1000}) {
      for (size_t shift : {0, 1, 7}) {
        std::vector<uint8_t> src(bytes + 16), dst(bytes + 16, 0);
        for (size_t i = 0; i < src.size(); ++i) src[i] = i * 7 + 1;
        CopyInto(dst.data() + shift, src.data(), bytes, streaming);
        EXPECT_EQ(std::memcmp(dst.data() + shift, src.data(), bytes), 0)
            << bytes << " bytes, shift " << shift;
        EXPECT_EQ(dst[shift + bytes], 0);
      }
    }
  }
}

TEST(HostKernels, DivideInPlace) {
  std::vector<int32_t> ints = {7, -7, 9};
  DivideInPlace(ints.data(), 3, DataType::kInt32, 2);
  EXPECT_EQ(ints, (std::vector<int32_t>{3, -3, 4}));
  std::vector<double> doubles = {1.0, 3.0};
  DivideInPlace(doubles.data(), 2, DataType::kFloat64, 4);
  EXPECT_EQ(doubles, (std::vector<double>{0.25, 0.75}));
}

float FromBits(uint16_t bits) {
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(bits));
}

uint16_t ToBits(float value) {
  return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(value));
}

// The contract for bfloat16: op in float32, then one rounding to nearest
// even (Eigen::bfloat16's, checked against known bits below).
uint16_t ReferenceBf16(uint16_t a, uint16_t b, ReduceOp op, int divisor) {
  const float x = FromBits(a), y = FromBits(b);
  switch (op) {
    case ReduceOp::kSum:
      return ToBits(x + y);
    case ReduceOp::kAvg:
      return ToBits(divisor > 0 ? (x + y) / static_cast<float>(divisor)
                                : x + y);
    case ReduceOp::kMax:
      return ToBits(x > y ? x : y);
    case ReduceOp::kMin:
      return ToBits(x < y ? x : y);
  }
  return 0;
}

bool SameBf16(uint16_t a, uint16_t b) {
  // Any NaN equals any NaN; everything else bit for bit.
  return a == b || (std::isnan(FromBits(a)) && std::isnan(FromBits(b)));
}

TEST(HostKernels, Bf16RoundsToNearestEven) {
  const float one = 1.0f, ulp = 1.0f / 128;  // bfloat16's step at 1.
  EXPECT_EQ(ToBits(one), 0x3F80);
  // Halfway cases go to the even neighbour, in both directions.
  uint16_t dst[9];
  const uint16_t a[9] = {0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x3F80,
                         0x3F80, 0x3F80, 0x3F80, 0x3F81};
  uint16_t b[9];
  for (int i = 0; i < 9; ++i) b[i] = ToBits(ulp / 2);  // exact: 2^-8
  CombineInto(dst, a, b, 9, DataType::kBFloat16, ReduceOp::kSum, 0, false);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(dst[i], 0x3F80) << i;  // 1 + ulp/2
  EXPECT_EQ(dst[8], 0x3F82);  // (1 + ulp) + ulp/2 -> 1 + 2 ulp (even)
  EXPECT_EQ(FromBits(dst[8]), one + 2 * ulp);
}

TEST(HostKernels, Bf16CombineMatchesFloatThenOneRounding) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> bits(0, 0xFFFF);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
    for (int divisor : {0, 3, 7}) {
      for (bool streaming : {false, true}) {
        for (size_t count : {0, 1, 7, 8, 9, 15, 16, 17, 63, 1000}) {
          for (size_t shift : {0, 1, 3}) {
            std::vector<uint16_t> a(count + 16), b(count + 16),
                dst(count + 16, 0);
            for (size_t i = 0; i < a.size(); ++i) {
              // Half arbitrary bit patterns (NaN, inf, subnormals), half
              // ordinary values, so carries and ties both occur.
              a[i] = i % 2 ? static_cast<uint16_t>(bits(rng))
                           : ToBits(normal(rng));
              b[i] = i % 3 ? ToBits(normal(rng))
                           : static_cast<uint16_t>(bits(rng));
            }
            CombineInto(dst.data() + shift, a.data() + shift, b.data() + shift,
                        count, DataType::kBFloat16, op, divisor, streaming);
            for (size_t i = 0; i < count; ++i) {
              const size_t k = shift + i;
              ASSERT_TRUE(
                  SameBf16(dst[k], ReferenceBf16(a[k], b[k], op, divisor)))
                  << Name(op) << " count " << count << " shift " << shift
                  << " i " << i << ": " << std::hex << a[k] << " " << b[k]
                  << " gave " << dst[k] << (streaming ? " streaming" : "");
            }
            EXPECT_EQ(dst[shift + count], 0) << "wrote past the end";
            // Every narrower body this CPU can run gives the same bits.
            for (Bf16Isa isa : {Bf16Isa::kSse2, Bf16Isa::kAvx2}) {
              if (!CpuHasBf16Isa(isa)) continue;
              std::vector<uint16_t> other(count + 16, 0);
              CombineBf16Using(isa, other.data() + shift, a.data() + shift,
                               b.data() + shift, count, op, divisor, streaming);
              ASSERT_EQ(other, dst)
                  << "body " << static_cast<int>(isa) << " count " << count;
            }
          }
        }
      }
    }
  }
}

TEST(HostKernels, Bf16UsesTheWidestInstructionsThisCpuHas) {
  // The vector body in use here (the narrower ones are covered on CPUs
  // without the wider instructions; counts above leave remainders for the
  // SSE2 body anyway).
  const char* expected = __builtin_cpu_supports("avx512f") ? "avx512f"
                         : __builtin_cpu_supports("avx2")  ? "avx2"
                                                           : "sse2";
  EXPECT_STREQ(Bf16KernelIsa(), expected);
  RecordProperty("bf16_kernel_isa", Bf16KernelIsa());
}

TEST(HostKernels, Bf16DivideInPlace) {
  std::vector<uint16_t> v = {ToBits(3.0f), ToBits(-1.0f), ToBits(1.0f)};
  DivideInPlace(v.data(), v.size(), DataType::kBFloat16, 2);
  EXPECT_EQ(FromBits(v[0]), 1.5f);
  EXPECT_EQ(FromBits(v[1]), -0.5f);
  EXPECT_EQ(FromBits(v[2]), 0.5f);
}

}  // namespace
}  // namespace ringlet::collectives::host
