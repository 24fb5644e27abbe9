#include "nn/parallel/bf16_wire.h"

#include <Eigen/Core>

namespace ringlet::nn {

void CastToBf16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(src[i]));
  }
}

void CastFromBf16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    dst[i] =
        static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(src[i]));
  }
}

}  // namespace ringlet::nn
