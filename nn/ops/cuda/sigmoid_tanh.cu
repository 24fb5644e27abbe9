// Sigmoid and tanh on CUDA devices: one kernel each way for float32 and
// bfloat16, float32 arithmetic (the CPU's formulas), rounded once to the
// output's type.
#include "nn/cuda/float_types.cuh"
#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/sigmoid_tanh.h"

namespace ringlet::nn::cuda_ops {
namespace {

struct Sigmoid {
  __device__ static float Value(float x) { return 1.0f / (1.0f + expf(-x)); }
  __device__ static float Slope(float y) { return y * (1.0f - y); }
};

struct Tanh {
  __device__ static float Value(float x) { return tanhf(x); }
  __device__ static float Slope(float y) { return 1.0f - y * y; }
};

template <typename F, typename T>
__global__ void ForwardKernel(const T* x, T* y, int64_t n) {
  RINGLET_FOR_EACH_ELEMENT(i, n) {
    y[i] = FromFloat<T>(F::Value(ToFloat(x[i])));
  }
}

template <typename F, typename T, typename G>
__global__ void BackwardKernel(const T* y, const G* dy, G* dx, int64_t n) {
  RINGLET_FOR_EACH_ELEMENT(i, n) {
    dx[i] = FromFloat<G>(ToFloat(dy[i]) * F::Slope(ToFloat(y[i])));
  }
}

template <typename F>
Tensor ForwardCuda(const Tensor& x) {
  OnDevice on(x);
  Tensor y = OutputLike(x, x.dtype());
  if (x.numel() == 0) return y;
  WithElementType(x.dtype(), [&](auto t) {
    using T = decltype(t);
    ForwardKernel<F, T>
        <<<ElementwiseBlocks(x.numel()), kElementwiseThreads, 0, on.stream()>>>(
            static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()),
            x.numel());
  });
  RINGLET_CUDA_CHECK(cudaGetLastError());
  return y;
}

template <typename F>
Tensor BackwardCuda(const Tensor& y, const Tensor& dy_any) {
  OnDevice on(y);
  const Tensor dy = InFormatOf(dy_any, y);
  Tensor dx = OutputLike(y, dy.dtype());
  if (y.numel() == 0) return dx;
  WithElementType(y.dtype(), [&](auto t) {
    using T = decltype(t);
    WithElementType(dy.dtype(), [&](auto g) {
      using G = decltype(g);
      BackwardKernel<F, T, G>
          <<<ElementwiseBlocks(y.numel()), kElementwiseThreads, 0,
             on.stream()>>>(static_cast<const T*>(y.raw_data()),
                            static_cast<const G*>(dy.raw_data()),
                            static_cast<G*>(dx.raw_data()), y.numel());
    });
  });
  RINGLET_CUDA_CHECK(cudaGetLastError());
  return dx;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::sigmoid_forward, DeviceType::kCuda,
                        ForwardCuda<Sigmoid>);
RINGLET_REGISTER_KERNEL(kernels::sigmoid_backward, DeviceType::kCuda,
                        BackwardCuda<Sigmoid>);
RINGLET_REGISTER_KERNEL(kernels::tanh_forward, DeviceType::kCuda,
                        ForwardCuda<Tanh>);
RINGLET_REGISTER_KERNEL(kernels::tanh_backward, DeviceType::kCuda,
                        BackwardCuda<Tanh>);

}  // namespace ringlet::nn::cuda_ops
