#include "nn/dtype.h"

#include <cstring>

namespace ringlet::nn {

size_t ElementSize(DType dtype) { return dtype == DType::kBFloat16 ? 2 : 4; }

const char* ToString(DType dtype) {
  return dtype == DType::kBFloat16 ? "bfloat16" : "float32";
}

DType ParseDType(const std::string& name) {
  if (name == "float32" || name == "fp32") return DType::kFloat32;
  if (name == "bfloat16" || name == "bf16") return DType::kBFloat16;
  throw std::invalid_argument("unknown element type '" + name +
                              "'; choose float32 (fp32) or bfloat16 (bf16)");
}

// Bit arithmetic rather than Eigen::bfloat16's per-element conversion: the
// compiler vectorises these loops (no branch), and they move every
// activation of a bfloat16 step.
void FloatToBf16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &src[i], 4);
    // Round to nearest, ties to even: add 0x7fff plus the kept part's
    // lowest bit, then drop the low half.
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    // A NaN stays a NaN (quiet, its sign kept) instead of rounding into
    // infinity.
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    dst[i] = static_cast<uint16_t>(nan ? ((u >> 16) | 0x40u) : rounded);
  }
}

void Bf16ToFloat(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(src[i]) << 16;
    std::memcpy(&dst[i], &u, 4);
  }
}

}  // namespace ringlet::nn
