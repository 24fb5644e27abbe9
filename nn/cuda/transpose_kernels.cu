// A tiled transpose: each block moves 32 x 32 tiles through shared memory,
// so both the reads and the writes are coalesced. Grid-stride over tiles
// and matrices, so every size fits one launch shape.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "nn/cuda/cuda_check.h"
#include "nn/cuda/transpose_kernels.h"

namespace ringlet::nn::cuda {
namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // A block is 32 x 8 threads.

template <typename T>
__global__ void transpose_batched_kernel(const T* src, T* dst, int64_t batch,
                                         int64_t rows, int64_t cols,
                                         int64_t row_tiles, int64_t col_tiles) {
  __shared__ T tile[kTile][kTile + 1];  // +1: no bank conflicts.
  const int64_t tiles = row_tiles * col_tiles;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    const T* from = src + b * rows * cols;
    T* to = dst + b * rows * cols;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      const int64_t i0 = (t / col_tiles) * kTile, j0 = (t % col_tiles) * kTile;
      for (int k = threadIdx.y; k < kTile; k += kRowsPerPass) {
        const int64_t i = i0 + k, j = j0 + threadIdx.x;
        if (i < rows && j < cols) tile[k][threadIdx.x] = from[i * cols + j];
      }
      __syncthreads();
      for (int k = threadIdx.y; k < kTile; k += kRowsPerPass) {
        const int64_t j = j0 + k, i = i0 + threadIdx.x;
        if (i < rows && j < cols) to[j * rows + i] = tile[threadIdx.x][k];
      }
      __syncthreads();
    }
  }
}

}  // namespace

void transpose_batched(const void* src, void* dst, int element_bytes,
                       int64_t batch, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  if (batch == 0 || rows == 0 || cols == 0) return;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  const dim3 grid(
      static_cast<unsigned>(std::min<int64_t>(row_tiles * col_tiles, 1 << 16)),
      1, static_cast<unsigned>(std::min<int64_t>(batch, 65535)));
  const dim3 block(kTile, kRowsPerPass);
  if (element_bytes == 2) {
    transpose_batched_kernel<<<grid, block, 0, stream>>>(
        static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), batch,
        rows, cols, row_tiles, col_tiles);
  } else if (element_bytes == 4) {
    transpose_batched_kernel<<<grid, block, 0, stream>>>(
        static_cast<const float*>(src), static_cast<float*>(dst), batch, rows,
        cols, row_tiles, col_tiles);
  } else {
    throw std::invalid_argument("transpose: elements of " +
                                std::to_string(element_bytes) +
                                " bytes; 2 or 4 are supported");
  }
  RINGLET_CUDA_CHECK_LAUNCH();
}

}  // namespace ringlet::nn::cuda
