#include "nn/parallel/bf16_wire.h"

#include <Eigen/Core>
#include <stdexcept>
#include <string>

namespace ringlet::nn {

void CheckGradWire(collectives::DataType wire,
                   const std::vector<Device>& devices) {
  if (wire == collectives::DataType::kFloat32) return;
  if (wire != collectives::DataType::kBFloat16) {
    throw std::invalid_argument(
        std::string("gradients go on the wire as float32 or bfloat16, not ") +
        collectives::Name(wire));
  }
  for (const Device& d : devices) {
    if (d.is_cuda()) {
      throw std::invalid_argument(
          "gradients in bfloat16 on the wire (--grad_dtype=bf16) run on CPU "
          "devices; on " +
          ToString(d) +
          " they are not written yet: use --grad_dtype=fp32 there");
    }
  }
}

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
