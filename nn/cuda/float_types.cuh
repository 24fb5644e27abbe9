// What a kernel written once for float32 and bfloat16 needs (llm.c's
// `template <typename Tp>` kernels): loads that widen to float, stores that
// round once to nearest even (the CPU's FloatToBf16), a grid-stride loop,
// and the host's launch by an element type.
#ifndef RINGLET_NN_CUDA_FLOAT_TYPES_CUH_
#define RINGLET_NN_CUDA_FLOAT_TYPES_CUH_

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "nn/dtype.h"

namespace ringlet::nn::cuda {

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

inline constexpr int kElementwiseThreads = 256;

// Blocks for n elements, one thread each, capped: the grid-stride loop
// covers the rest.
inline int ElementwiseBlocks(int64_t n) {
  return static_cast<int>(std::clamp<int64_t>(
      (n + kElementwiseThreads - 1) / kElementwiseThreads, 1, 65535));
}

#define RINGLET_FOR_EACH_ELEMENT(i, n)                                      \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

// Calls fn(T{}) with T the CUDA type of `dtype`'s elements.
template <typename Fn>
void WithElementType(DType dtype, Fn&& fn) {
  if (dtype == DType::kBFloat16) {
    fn(__nv_bfloat16{});
  } else {
    fn(float{});
  }
}

}  // namespace ringlet::nn::cuda

// The ops' kernels (nn/ops/cuda) use them as their own.
namespace ringlet::nn::cuda_ops {
using cuda::ElementwiseBlocks;
using cuda::FromFloat;
using cuda::kElementwiseThreads;
using cuda::ToFloat;
using cuda::WithElementType;
}  // namespace ringlet::nn::cuda_ops

#endif  // RINGLET_NN_CUDA_FLOAT_TYPES_CUH_
