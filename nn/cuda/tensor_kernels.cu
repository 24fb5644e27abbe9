// The tensor runtime's kernels (tensor_kernels.h), written once for their
// element types (float_types.cuh).
#include <cuda_bf16.h>

#include "nn/cuda/cuda_check.h"
#include "nn/cuda/float_types.cuh"
#include "nn/cuda/tensor_kernels.h"

namespace ringlet::nn::cuda {
namespace {

template <typename T>
__global__ void FillKernel(T* out, int64_t n, T value) {
  RINGLET_FOR_EACH_ELEMENT(i, n) { out[i] = value; }
}

// out[i] = in[i] widened to float and stored as To (rounded once).
template <typename From, typename To>
__global__ void ConvertKernel(const From* in, To* out, int64_t n) {
  RINGLET_FOR_EACH_ELEMENT(i, n) { out[i] = FromFloat<To>(ToFloat(in[i])); }
}

template <typename T>
void Fill(T* out, int64_t n, T value, cudaStream_t stream) {
  if (n == 0) return;
  FillKernel<T>
      <<<ElementwiseBlocks(n), kElementwiseThreads, 0, stream>>>(out, n, value);
  RINGLET_CUDA_CHECK_LAUNCH();
}

template <typename From, typename To>
void Convert(const From* in, To* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  ConvertKernel<From, To>
      <<<ElementwiseBlocks(n), kElementwiseThreads, 0, stream>>>(in, out, n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

}  // namespace

void fill_forward(float* out, int64_t n, float value, cudaStream_t stream) {
  Fill(out, n, value, stream);
}

void fill_bf16_forward(uint16_t* out, int64_t n, float value,
                       cudaStream_t stream) {
  Fill(reinterpret_cast<__nv_bfloat16*>(out), n, __float2bfloat16_rn(value),
       stream);
}

void float_to_bf16_forward(const float* in, uint16_t* out, int64_t n,
                           cudaStream_t stream) {
  Convert(in, reinterpret_cast<__nv_bfloat16*>(out), n, stream);
}

void bf16_to_float_forward(const uint16_t* in, float* out, int64_t n,
                           cudaStream_t stream) {
  Convert(reinterpret_cast<const __nv_bfloat16*>(in), out, n, stream);
}

}  // namespace ringlet::nn::cuda
