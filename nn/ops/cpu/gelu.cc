// GELU on CPU devices: float32 arithmetic over the widened input, rounded
// once to the output's type.
#include "nn/ops/gelu.h"

#include <cmath>
#include <cstdint>

#include "nn/ops/autocast.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

constexpr int64_t kGrain = int64_t{1} << 14;
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

Tensor GeluForwardCpu(const Tensor& x_any) {
  const Tensor x = AsDType(x_any, DType::kFloat32);
  Tensor y = Tensor::Uninitialized(x.shape());
  const float* in = x.data();
  float* out = y.data();
  ParallelForElements(x.numel(), kGrain, [in, out](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      out[i] = 0.5f * in[i] * (1.0f + std::erf(in[i] * kInvSqrt2));
    }
  });
  return AsDType(y, x_any.dtype());
}

Tensor GeluBackwardCpu(const Tensor& x_any, const Tensor& dy_any) {
  const Tensor x = AsDType(x_any, DType::kFloat32);
  const Tensor dy = AsDType(dy_any, DType::kFloat32);
  Tensor dx = Tensor::Uninitialized(x.shape());
  const float* in = x.data();
  const float* g = dy.data();
  float* out = dx.data();
  ParallelForElements(
      x.numel(), kGrain, [in, g, out](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const float cdf = 0.5f * (1.0f + std::erf(in[i] * kInvSqrt2));
          const float pdf = kInvSqrt2Pi * std::exp(-0.5f * in[i] * in[i]);
          out[i] = g[i] * (cdf + in[i] * pdf);
        }
      });
  return AsDType(dx, dy_any.dtype());
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::gelu_forward, DeviceType::kCpu,
                        GeluForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::gelu_backward, DeviceType::kCpu,
                        GeluBackwardCpu);

}  // namespace ringlet::nn
