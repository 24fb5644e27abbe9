// The element types' names, sizes and host conversions: rounding to
// nearest even as every bfloat16 library does, exact widening.
#include "nn/dtype.h"

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ringlet::nn {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(DType, NamesSizesAndParsing) {
  EXPECT_EQ(ElementSize(DType::kFloat32), 4u);
  EXPECT_EQ(ElementSize(DType::kBFloat16), 2u);
  EXPECT_STREQ(ToString(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(ParseDType("bf16"), DType::kBFloat16);
  EXPECT_EQ(ParseDType("bfloat16"), DType::kBFloat16);
  EXPECT_EQ(ParseDType("fp32"), DType::kFloat32);
  EXPECT_EQ(ParseDType("float32"), DType::kFloat32);
  try {
    ParseDType("fp16");
    FAIL() << "fp16 parsed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16 (bf16)"), std::string::npos);
  }
}

// bfloat16 keeps the top 16 bits of a float32, rounded to nearest with
// ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 (goes to the
// even 1), 1 + 3 * 2^-8 halfway between 1 + 2^-7 and 1 + 2^-6 (goes up).
TEST(DType, Bf16RoundsToNearestEven) {
  const std::vector<float> in = {
      1.0f,
      1.0f + std::ldexp(1.0f, -8),
      1.0f + 3 * std::ldexp(1.0f, -8),
      1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20),
      -2.5f,
      3.0e38f,
      std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN()};
  std::vector<uint16_t> bits(in.size());
  FloatToBf16(in.data(), bits.data(), static_cast<int64_t>(in.size()));
  std::vector<float> out(in.size());
  Bf16ToFloat(bits.data(), out.data(), static_cast<int64_t>(in.size()));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(out[2], 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(out[3], 1.0f + std::ldexp(1.0f, -7));  // Above halfway: up.
  EXPECT_EQ(out[4], -2.5f);
  EXPECT_EQ(Bits(out[5]) & 0xffffu, 0u);  // Widening is exact: low bits 0.
  EXPECT_NEAR(out[5], 3.0e38f, 3.0e38f * std::ldexp(1.0f, -8));
  EXPECT_TRUE(std::isinf(out[6]));
  EXPECT_TRUE(std::isnan(out[7]));
  // As Eigen's conversion, on every value class: the bit arithmetic here
  // against the library's.
  for (uint32_t b = 0; b < 0xffffffffu - 0x10001u; b += 0x10001u + (b >> 9)) {
    const float f = FromBits(b);
    uint16_t ours;
    FloatToBf16(&f, &ours, 1);
    const uint16_t eigen =
        Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(f));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(FromBits(uint32_t{ours} << 16))) << b;
    } else {
      EXPECT_EQ(ours, eigen) << b;
    }
  }
  // Every bfloat16 survives the round trip bit for bit.
  for (uint32_t b = 0; b < 0x10000u; b += 7) {
    const float f = FromBits(b << 16);
    if (std::isnan(f)) continue;
    uint16_t back;
    FloatToBf16(&f, &back, 1);
    EXPECT_EQ(back, b) << b;
  }
}

}  // namespace
}  // namespace ringlet::nn
