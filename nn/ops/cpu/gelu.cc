// GELU on CPU devices: float32 arithmetic over the widened input, rounded
// once to the output's type.
#include "nn/ops/gelu.h"

#include <cmath>

#include "nn/ops/cpu/float_map.h"

namespace ringlet::nn {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

Tensor GeluForwardCpu(const Tensor& x) {
  return MapFloat32(
      x, [](float v) { return 0.5f * v * (1.0f + std::erf(v * kInvSqrt2)); });
}

Tensor GeluBackwardCpu(const Tensor& x, const Tensor& dy) {
  return MapFloat32Gradient(x, dy, [](float v) {
    const float cdf = 0.5f * (1.0f + std::erf(v * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * std::exp(-0.5f * v * v);
    return cdf + v * pdf;
  });
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::gelu_forward, DeviceType::kCpu,
                        GeluForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::gelu_backward, DeviceType::kCpu,
                        GeluBackwardCpu);

}  // namespace ringlet::nn
