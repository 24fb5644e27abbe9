// Sigmoid and tanh on CPU devices: float32 arithmetic over the widened
// input, rounded once to the output's type.
#include "nn/ops/sigmoid_tanh.h"

#include <cmath>

#include "nn/ops/cpu/float_map.h"

namespace ringlet::nn {
namespace {

Tensor SigmoidForwardCpu(const Tensor& x) {
  return MapFloat32(x, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
}

Tensor SigmoidBackwardCpu(const Tensor& y, const Tensor& dy) {
  return MapFloat32Gradient(y, dy, [](float s) { return s * (1.0f - s); });
}

Tensor TanhForwardCpu(const Tensor& x) {
  return MapFloat32(x, [](float v) { return std::tanh(v); });
}

Tensor TanhBackwardCpu(const Tensor& y, const Tensor& dy) {
  return MapFloat32Gradient(y, dy, [](float t) { return 1.0f - t * t; });
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::sigmoid_forward, DeviceType::kCpu,
                        SigmoidForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::sigmoid_backward, DeviceType::kCpu,
                        SigmoidBackwardCpu);
RINGLET_REGISTER_KERNEL(kernels::tanh_forward, DeviceType::kCpu,
                        TanhForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::tanh_backward, DeviceType::kCpu,
                        TanhBackwardCpu);

}  // namespace ringlet::nn
