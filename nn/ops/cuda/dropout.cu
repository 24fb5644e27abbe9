// Dropout on CUDA devices: one kernel for float32 and bfloat16, the mask
// drawn per element by the host's function (dropout.h), so the GPU keeps
// the elements the CPU keeps.
#include "nn/cuda/float_types.cuh"
#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/dropout.h"

namespace ringlet::nn::cuda_ops {
namespace {

template <typename T>
__global__ void DropoutKernel(const T* x, T* y, int64_t n, uint64_t seed,
                              uint64_t threshold, float scale) {
  RINGLET_FOR_EACH_ELEMENT(i, n) {
    y[i] = FromFloat<T>(DropoutKeeps(seed, i, threshold) ? ToFloat(x[i]) * scale
                                                         : 0.0f);
  }
}

Tensor DropoutCuda(const Tensor& x, uint64_t seed, uint64_t threshold,
                   float scale) {
  OnDevice on(x);
  // Element i of the mask is element i of NCHW order: a channels-last
  // tensor is read in that order first.
  const Tensor in = x.ToMemoryFormat(MemoryFormat::kContiguous);
  Tensor y = OutputLike(in, in.dtype());
  if (in.numel() == 0) return y;
  WithElementType(in.dtype(), [&](auto t) {
    using T = decltype(t);
    DropoutKernel<T><<<ElementwiseBlocks(in.numel()), kElementwiseThreads, 0,
                       on.stream()>>>(static_cast<const T*>(in.raw_data()),
                                      static_cast<T*>(y.raw_data()), in.numel(),
                                      seed, threshold, scale);
  });
  RINGLET_CUDA_CHECK(cudaGetLastError());
  return y;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::dropout, DeviceType::kCuda, DropoutCuda);

}  // namespace ringlet::nn::cuda_ops
