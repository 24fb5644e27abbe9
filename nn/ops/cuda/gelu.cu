// GELU on CUDA devices: one kernel for float32 and bfloat16, float32
// arithmetic, rounded once to the output's type.
#include "nn/cuda/float_types.cuh"
#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/gelu.h"

namespace ringlet::nn::cuda_ops {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

template <typename T>
__global__ void GeluForwardKernel(const T* x, T* y, int64_t n) {
  RINGLET_FOR_EACH_ELEMENT(i, n) {
    const float v = ToFloat(x[i]);
    y[i] = FromFloat<T>(0.5f * v * (1.0f + erff(v * kInvSqrt2)));
  }
}

template <typename T, typename G>
__global__ void GeluBackwardKernel(const T* x, const G* dy, G* dx, int64_t n) {
  RINGLET_FOR_EACH_ELEMENT(i, n) {
    const float v = ToFloat(x[i]);
    const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    dx[i] = FromFloat<G>(ToFloat(dy[i]) * (cdf + v * pdf));
  }
}

Tensor GeluForwardCuda(const Tensor& x) {
  OnDevice on(x);
  Tensor y = OutputLike(x, x.dtype());
  if (x.numel() == 0) return y;
  WithElementType(x.dtype(), [&](auto t) {
    using T = decltype(t);
    GeluForwardKernel<T>
        <<<ElementwiseBlocks(x.numel()), kElementwiseThreads, 0, on.stream()>>>(
            static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()),
            x.numel());
  });
  RINGLET_CUDA_CHECK(cudaGetLastError());
  return y;
}

Tensor GeluBackwardCuda(const Tensor& x, const Tensor& dy_any) {
  OnDevice on(x);
  const Tensor dy = InFormatOf(dy_any, x);
  Tensor dx = OutputLike(x, dy.dtype());
  if (x.numel() == 0) return dx;
  WithElementType(x.dtype(), [&](auto t) {
    using T = decltype(t);
    WithElementType(dy.dtype(), [&](auto g) {
      using G = decltype(g);
      GeluBackwardKernel<T, G>
          <<<ElementwiseBlocks(x.numel()), kElementwiseThreads, 0,
             on.stream()>>>(static_cast<const T*>(x.raw_data()),
                            static_cast<const G*>(dy.raw_data()),
                            static_cast<G*>(dx.raw_data()), x.numel());
    });
  });
  RINGLET_CUDA_CHECK(cudaGetLastError());
  return dx;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::gelu_forward, DeviceType::kCuda,
                        GeluForwardCuda);
RINGLET_REGISTER_KERNEL(kernels::gelu_backward, DeviceType::kCuda,
                        GeluBackwardCuda);

}  // namespace ringlet::nn::cuda_ops
