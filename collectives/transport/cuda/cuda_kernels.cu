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

// One thread per element, grid-stride so any n fits any grid.
template <typename T, typename Op>
__global__ void combine_forward_kernel(T* dst, const T* a, const T* b, size_t n,
                                       int avg_divisor) {
  const Op op;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    T v = op(a[i], b[i]);
    if (avg_divisor > 0) v = v / static_cast<T>(avg_divisor);
    dst[i] = v;
  }
}

template <typename T, typename Op>
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
      return Launch<T, SumOp<T>>(dst, a, b, n, 0, stream);
    case ReduceOp::kAvg:
      return Launch<T, SumOp<T>>(dst, a, b, n, avg_divisor, stream);
    case ReduceOp::kMax:
      return Launch<T, MaxOp<T>>(dst, a, b, n, 0, stream);
    case ReduceOp::kMin:
      return Launch<T, MinOp<T>>(dst, a, b, n, 0, stream);
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
  }
  return cudaErrorInvalidValue;
}

}  // namespace ringlet::collectives::cuda
