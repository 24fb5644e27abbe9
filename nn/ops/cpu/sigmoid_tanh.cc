// Sigmoid and tanh on CPU devices: float32 arithmetic over the widened
// input, rounded once to the output's type.
#include "nn/ops/sigmoid_tanh.h"

#include <cmath>
#include <cstdint>

#include "nn/ops/autocast.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

constexpr int64_t kGrain = int64_t{1} << 14;

// y = f(x) elementwise, in float32, then in x's type.
template <typename Fn>
Tensor Map(const Tensor& x_any, Fn f) {
  const Tensor x = AsDType(x_any, DType::kFloat32);
  Tensor y = Tensor::Uninitialized(x.shape());
  const float* in = x.data();
  float* out = y.data();
  ParallelForElements(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = f(in[i]);
  });
  return AsDType(y, x_any.dtype());
}

// dx = dy g(y) elementwise, in float32, then in dy's type.
template <typename Fn>
Tensor MapGradient(const Tensor& y_any, const Tensor& dy_any, Fn g) {
  const Tensor y = AsDType(y_any, DType::kFloat32);
  const Tensor dy = AsDType(dy_any, DType::kFloat32);
  Tensor dx = Tensor::Uninitialized(y.shape());
  const float* yv = y.data();
  const float* gv = dy.data();
  float* out = dx.data();
  ParallelForElements(y.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = gv[i] * g(yv[i]);
  });
  return AsDType(dx, dy_any.dtype());
}

Tensor SigmoidForwardCpu(const Tensor& x) {
  return Map(x, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
}

Tensor SigmoidBackwardCpu(const Tensor& y, const Tensor& dy) {
  return MapGradient(y, dy, [](float s) { return s * (1.0f - s); });
}

Tensor TanhForwardCpu(const Tensor& x) {
  return Map(x, [](float v) { return std::tanh(v); });
}

Tensor TanhBackwardCpu(const Tensor& y, const Tensor& dy) {
  return MapGradient(y, dy, [](float t) { return 1.0f - t * t; });
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
