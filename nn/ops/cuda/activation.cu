// ReLU on CUDA devices: cuDNN's activation in float32, a kernel of ours in
// bfloat16 that keeps exactly the CPU's elements (nn/ops/cpu/activation.cc).
#include <cstdint>

#include "nn/cuda/float_types.cuh"
#include "nn/ops/activation.h"
#include "nn/ops/cuda/cuda_op_support.h"

namespace ringlet::nn::cuda_ops {
namespace {

// Above zero: 0x0001 to 0x7F80 (+infinity), not -0 nor a NaN (the CPU's
// Bf16Positive).
__device__ bool Bf16Positive(uint16_t bits) {
  return static_cast<uint16_t>(bits - 1) < 0x7F80;
}

__global__ void ReluBf16ForwardKernel(const uint16_t* in, uint16_t* out,
                                      int64_t n) {
  RINGLET_FOR_EACH_ELEMENT(i, n) { out[i] = Bf16Positive(in[i]) ? in[i] : 0; }
}

__global__ void ReluBf16BackwardKernel(const uint16_t* y, const uint16_t* dy,
                                       uint16_t* dx, int64_t n) {
  RINGLET_FOR_EACH_ELEMENT(i, n) { dx[i] = Bf16Positive(y[i]) ? dy[i] : 0; }
}

// cuDNN's ReLU, on the tensor viewed as [1, 1, 1, n].
struct ReluDesc {
  ReluDesc() {
    RINGLET_CUDNN_CHECK(cudnnCreateActivationDescriptor(&desc));
    RINGLET_CUDNN_CHECK(cudnnSetActivationDescriptor(
        desc, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
  ~ReluDesc() { cudnnDestroyActivationDescriptor(desc); }
  cudnnActivationDescriptor_t desc = nullptr;
};

Tensor ReluForwardCuda(const Tensor& x) {
  OnDevice on(x);
  Tensor y = OutputLike(x, x.dtype());
  if (x.numel() == 0) return y;
  if (x.dtype() == DType::kBFloat16) {
    ReluBf16ForwardKernel<<<ElementwiseBlocks(x.numel()), kElementwiseThreads,
                            0, on.stream()>>>(x.bf16_data(), y.bf16_data(),
                                              x.numel());
    RINGLET_CUDA_CHECK_LAUNCH();
    return y;
  }
  const ReluDesc relu;
  const TensorDesc desc(1, 1, 1, x.numel());
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnActivationForward(
      on.context.cudnn(), relu.desc, &one, desc.get(), x.device_data(), &zero,
      desc.get(), y.device_data()));
  return y;
}

// cuDNN takes the forward's input too; for ReLU y > 0 exactly where x > 0,
// so y stands in for x (the CPU op is written from y as well).
Tensor ReluBackwardCuda(const Tensor& y, const Tensor& dy_any) {
  OnDevice on(y);
  const Tensor dy = InFormatOf(dy_any, y);
  Tensor dx = OutputLike(y, dy.dtype());
  if (y.numel() == 0) return dx;
  if (dy.dtype() == DType::kBFloat16) {  // y is bfloat16 too (the front).
    ReluBf16BackwardKernel<<<ElementwiseBlocks(y.numel()), kElementwiseThreads,
                             0, on.stream()>>>(y.bf16_data(), dy.bf16_data(),
                                               dx.bf16_data(), y.numel());
    RINGLET_CUDA_CHECK_LAUNCH();
    return dx;
  }
  const ReluDesc relu;
  const TensorDesc desc(1, 1, 1, y.numel());
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnActivationBackward(
      on.context.cudnn(), relu.desc, &one, desc.get(), y.device_data(),
      desc.get(), dy.device_data(), desc.get(), y.device_data(), &zero,
      desc.get(), dx.device_data()));
  return dx;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::relu_forward, DeviceType::kCuda,
                        ReluForwardCuda);
RINGLET_REGISTER_KERNEL(kernels::relu_backward, DeviceType::kCuda,
                        ReluBackwardCuda);

}  // namespace ringlet::nn::cuda_ops
