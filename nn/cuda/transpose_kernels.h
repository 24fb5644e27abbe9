// Batched matrix transposes on GPUs: how a tensor changes memory format
// (NCHW to NHWC transposes each image's C x (H * W) matrix).
#ifndef RINGLET_NN_CUDA_TRANSPOSE_KERNELS_H_
#define RINGLET_NN_CUDA_TRANSPOSE_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace ringlet::nn::cuda {

// For each of `batch` matrices of rows x cols elements of `element_bytes`
// (2 or 4) bytes: dst[b][j][i] = src[b][i][j]. Device pointers; src and
// dst must not overlap.
void transpose_batched(const void* src, void* dst, int element_bytes,
                       int64_t batch, int64_t rows, int64_t cols,
                       cudaStream_t stream);

}  // namespace ringlet::nn::cuda

#endif  // RINGLET_NN_CUDA_TRANSPOSE_KERNELS_H_
