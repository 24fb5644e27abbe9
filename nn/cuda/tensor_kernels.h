// The kernels the tensor runtime itself needs on CUDA devices: fills and
// conversions between float32 and bfloat16 (Tensor::Full, Tensor::To).
// Ops' kernels live with their ops (nn/ops/cuda). Each launcher takes the
// device's stream and checks the launch; pointers are device memory; n
// may be 0.
#ifndef RINGLET_NN_CUDA_TENSOR_KERNELS_H_
#define RINGLET_NN_CUDA_TENSOR_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace ringlet::nn::cuda {

// out[i] = value.
void fill_forward(float* out, int64_t n, float value, cudaStream_t stream);

// bfloat16 (as its 16 bits, __nv_bfloat16's layout): out[i] = value
// rounded to nearest even.
void fill_bf16_forward(uint16_t* out, int64_t n, float value,
                       cudaStream_t stream);
// out[i] = in[i] rounded to bfloat16, nearest even (the CPU's FloatToBf16).
void float_to_bf16_forward(const float* in, uint16_t* out, int64_t n,
                           cudaStream_t stream);
// out[i] = in[i] as float32 (exact).
void bf16_to_float_forward(const uint16_t* in, float* out, int64_t n,
                           cudaStream_t stream);

}  // namespace ringlet::nn::cuda

#endif  // RINGLET_NN_CUDA_TENSOR_KERNELS_H_
