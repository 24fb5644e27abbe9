#include <cuda_bf16.h>

#include <cstdint>

#include "collectives/transport/cuda/cuda_kernels.h"

namespace ringlet::collectives::cuda {
namespace {

template <typename T>
struct SumOp {
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <typename T>
struct MaxOp {
  __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};
template <typename T>
struct MinOp {
  __device__ T operator()(T a, T b) const { return a < b ? a : b; }
};

// The type an element is combined in: itself, but float32 for bfloat16
// (one rounding to nearest even per step, as the host transport).
template <typename T>
struct Widened {
  using type = T;
  static __device__ T In(T v) { return v; }
  static __device__ T Out(T v) { return v; }
};
template <>
struct Widened<__nv_bfloat16> {
  using type = float;
  static __device__ float In(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __nv_bfloat16 Out(float v) {
    return __float2bfloat16_rn(v);
  }
};

// One thread per element, grid-stride so any n fits any grid.
template <typename T, template <typename> class Op>
__global__ void combine_forward_kernel(T* dst, const T* a, const T* b, size_t n,
                                       int avg_divisor) {
  using W = Widened<T>;
  using C = typename W::type;
  const Op<C> op;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    C v = op(W::In(a[i]), W::In(b[i]));
    if (avg_divisor > 0) v = v / static_cast<C>(avg_divisor);
    dst[i] = W::Out(v);
  }
}

template <typename T, template <typename> class Op>
cudaError_t Launch(void* dst, const void* a, const void* b, size_t n,
                   int avg_divisor, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const size_t blocks = (n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 4096 ? blocks : 4096);
  combine_forward_kernel<T, Op><<<grid, kThreads, 0, stream>>>(
      static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b),
      n, avg_divisor);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchTyped(void* dst, const void* a, const void* b, size_t n,
                        ReduceOp op, int avg_divisor, cudaStream_t stream) {
  switch (op) {
    case ReduceOp::kSum:
      return Launch<T, SumOp>(dst, a, b, n, 0, stream);
    case ReduceOp::kAvg:
      return Launch<T, SumOp>(dst, a, b, n, avg_divisor, stream);
    case ReduceOp::kMax:
      return Launch<T, MaxOp>(dst, a, b, n, 0, stream);
    case ReduceOp::kMin:
      return Launch<T, MinOp>(dst, a, b, n, 0, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t combine_forward(void* dst, const void* a, const void* b, size_t n,
                            DataType type, ReduceOp op, int avg_divisor,
                            cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (type) {
    case DataType::kFloat32:
      return LaunchTyped<float>(dst, a, b, n, op, avg_divisor, stream);
    case DataType::kFloat64:
      return LaunchTyped<double>(dst, a, b, n, op, avg_divisor, stream);
    case DataType::kInt32:
      return LaunchTyped<int32_t>(dst, a, b, n, op, avg_divisor, stream);
    case DataType::kBFloat16:
      return LaunchTyped<__nv_bfloat16>(dst, a, b, n, op, avg_divisor, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace ringlet::collectives::cuda
