#include <algorithm>
#include <stdexcept>
#include <string>

#include "nn/cuda/block_sum.cuh"
#include "nn/cuda/cuda_check.h"
#include "nn/cuda/float_types.cuh"
#include "nn/ops/cuda/channel_kernels.h"

namespace ringlet::nn::cuda_ops {
namespace {

constexpr int kThreads = 256;

// Element `k` of channel `ch` (k < n * hw) in NCHW storage.
__device__ int64_t ChannelOffset(int64_t k, int64_t ch, int64_t c, int64_t hw) {
  const int64_t i = k / hw;
  return (i * c + ch) * hw + (k - i * hw);
}

using cuda::BlockSum;

template <typename T>
__global__ void bias_add_kernel(T* out, const float* bias, int64_t channels,
                                int64_t spatial, int64_t n) {
  RINGLET_FOR_EACH_ELEMENT(i, n) {
    out[i] = FromFloat<T>(ToFloat(out[i]) + bias[(i / spatial) % channels]);
  }
}

// The sum over channel blockIdx.x of x (one block per channel).
__device__ double ChannelSum(const float* x, int64_t n, int64_t c, int64_t hw) {
  __shared__ double shared[kThreads];
  const int64_t ch = blockIdx.x;
  double sum = 0;
  for (int64_t k = threadIdx.x; k < n * hw; k += kThreads) {
    sum += x[ChannelOffset(k, ch, c, hw)];
  }
  return BlockSum<kThreads>(sum, shared);
}

__global__ void channel_sums_kernel(const float* x, int64_t n, int64_t c,
                                    int64_t hw, double* sums) {
  const double sum = ChannelSum(x, n, c, hw);
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = sum;
    if (blockIdx.x == 0) sums[c] = static_cast<double>(n * hw);
  }
}

// Whole images a block of the bias gradient's first pass sums (~8192
// elements: 32 a thread).
int64_t ImagesPerChunk(int64_t hw) {
  return std::max<int64_t>(1, 8192 / std::max<int64_t>(1, hw));
}

// First pass: block (chunk, ch) sums channel ch over the images of its
// chunk into partials[ch * chunks + chunk].
__global__ void channel_partial_sums_kernel(const float* x, int64_t n,
                                            int64_t c, int64_t hw,
                                            int64_t images_per_chunk,
                                            double* partials) {
  __shared__ double shared[kThreads];
  const int64_t chunk = blockIdx.x, ch = blockIdx.y;
  const int64_t first = chunk * images_per_chunk;
  const int64_t images =
      n - first < images_per_chunk ? n - first : images_per_chunk;
  // 32-bit index arithmetic inside a chunk: 64-bit division is slow.
  const unsigned plane = static_cast<unsigned>(hw);
  const unsigned count = static_cast<unsigned>(images * hw);
  const float* base = x + (first * c + ch) * hw;
  double sum = 0;
  for (unsigned k = threadIdx.x; k < count; k += kThreads) {
    const unsigned image = k / plane;
    sum += base[static_cast<int64_t>(image) * c * hw + (k - image * plane)];
  }
  sum = BlockSum<kThreads>(sum, shared);
  if (threadIdx.x == 0) partials[ch * gridDim.x + chunk] = sum;
}

// Second pass: one block per channel adds its chunks' partial sums, in
// the same order every time.
__global__ void channel_partials_to_float_kernel(const double* partials,
                                                 int64_t chunks, float* out) {
  __shared__ double shared[kThreads];
  const int64_t ch = blockIdx.x;
  double sum = 0;
  for (int64_t k = threadIdx.x; k < chunks; k += kThreads) {
    sum += partials[ch * chunks + k];
  }
  sum = BlockSum<kThreads>(sum, shared);
  if (threadIdx.x == 0) out[ch] = static_cast<float>(sum);
}

__global__ void channel_squared_deviations_kernel(const float* x, int64_t n,
                                                  int64_t c, int64_t hw,
                                                  const double* sums,
                                                  double* sq) {
  __shared__ double shared[kThreads];
  const int64_t ch = blockIdx.x;
  const double mean = sums[ch] / sums[c];
  double sum = 0;
  for (int64_t k = threadIdx.x; k < n * hw; k += kThreads) {
    const double d = x[ChannelOffset(k, ch, c, hw)] - mean;
    sum += d * d;
  }
  sum = BlockSum<kThreads>(sum, shared);
  if (threadIdx.x == 0) sq[ch] = sum;
}

__global__ void batch_norm_statistics_kernel(
    const double* sums, const double* sq, int64_t c, float eps, float momentum,
    float* mean, float* inv_std, float* running_mean, float* running_var) {
  const int64_t ch = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (ch >= c) return;
  const double m = sums[c];
  const float mu = static_cast<float>(sums[ch] / m);
  mean[ch] = mu;
  inv_std[ch] = static_cast<float>(1.0 / sqrt(sq[ch] / m + eps));
  running_mean[ch] = (1 - momentum) * running_mean[ch] + momentum * mu;
  running_var[ch] = (1 - momentum) * running_var[ch] +
                    momentum * static_cast<float>(sq[ch] / (m - 1));
}

__global__ void batch_norm_normalize_kernel(
    const float* x, int64_t total, int64_t c, int64_t hw, const float* mean,
    const float* inv_std, const float* gamma, const float* beta, float* y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t ch = (i / hw) % c;
    const float x_hat = (x[i] - mean[ch]) * inv_std[ch];
    y[i] = gamma[ch] * x_hat + beta[ch];
  }
}

__global__ void batch_norm_gradient_sums_kernel(const float* dy, const float* x,
                                                int64_t n, int64_t c,
                                                int64_t hw, const float* mean,
                                                const float* inv_std,
                                                double* sums, float* dgamma,
                                                float* dbeta) {
  __shared__ double shared[kThreads];
  const int64_t ch = blockIdx.x;
  const float mu = mean[ch], k = inv_std[ch];
  double sum_dy = 0, sum_dy_xh = 0;
  for (int64_t e = threadIdx.x; e < n * hw; e += kThreads) {
    const int64_t at = ChannelOffset(e, ch, c, hw);
    const float x_hat = (x[at] - mu) * k;
    sum_dy += dy[at];
    sum_dy_xh += static_cast<double>(dy[at]) * x_hat;
  }
  sum_dy = BlockSum<kThreads>(sum_dy, shared);
  sum_dy_xh = BlockSum<kThreads>(sum_dy_xh, shared);
  if (threadIdx.x == 0) {
    sums[ch] = sum_dy;
    sums[c + ch] = sum_dy_xh;
    dbeta[ch] = static_cast<float>(sum_dy);
    dgamma[ch] = static_cast<float>(sum_dy_xh);
  }
}

__global__ void batch_norm_input_gradient_kernel(
    const float* dy, const float* x, int64_t total, int64_t c, int64_t hw,
    const float* mean, const float* inv_std, const float* gamma,
    const double* sums, double m, float* dx) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t ch = (i / hw) % c;
    const float x_hat = (x[i] - mean[ch]) * inv_std[ch];
    const float k = gamma[ch] * inv_std[ch];
    const float mean_dy = static_cast<float>(sums[ch] / m);
    const float mean_dy_xh = static_cast<float>(sums[c + ch] / m);
    dx[i] = k * (dy[i] - mean_dy - x_hat * mean_dy_xh);
  }
}

int ElementBlocks(int64_t total) {
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 4096 ? blocks : 4096);
}

}  // namespace

void channel_sums(const float* x, int64_t n, int64_t c, int64_t hw,
                  double* sums, cudaStream_t stream) {
  if (c == 0) return;
  channel_sums_kernel<<<static_cast<int>(c), kThreads, 0, stream>>>(x, n, c, hw,
                                                                    sums);
  RINGLET_CUDA_CHECK_LAUNCH();
}

size_t channel_sums_float_scratch_bytes(int64_t n, int64_t c, int64_t hw) {
  const int64_t per_chunk = ImagesPerChunk(hw);
  const int64_t chunks = std::max<int64_t>(1, (n + per_chunk - 1) / per_chunk);
  return static_cast<size_t>(c * chunks) * sizeof(double);
}

void channel_sums_float(const float* x, int64_t n, int64_t c, int64_t hw,
                        double* scratch, float* out, cudaStream_t stream) {
  if (c == 0) return;
  const int64_t per_chunk = ImagesPerChunk(hw);
  const int64_t chunks = std::max<int64_t>(1, (n + per_chunk - 1) / per_chunk);
  if (n == 0 || hw == 0) {
    RINGLET_CUDA_CHECK(cudaMemsetAsync(
        out, 0, static_cast<size_t>(c) * sizeof(float), stream));
    return;
  }
  if (c > 65535) {  // A grid's y extent.
    throw std::invalid_argument("conv2d bias gradient: " + std::to_string(c) +
                                " channels; at most 65535 on a GPU");
  }
  const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(c));
  channel_partial_sums_kernel<<<grid, kThreads, 0, stream>>>(
      x, n, c, hw, per_chunk, scratch);
  RINGLET_CUDA_CHECK_LAUNCH();
  channel_partials_to_float_kernel<<<static_cast<int>(c), kThreads, 0,
                                     stream>>>(scratch, chunks, out);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void channel_squared_deviations(const float* x, int64_t n, int64_t c,
                                int64_t hw, const double* sums, double* sq,
                                cudaStream_t stream) {
  if (c == 0) return;
  channel_squared_deviations_kernel<<<static_cast<int>(c), kThreads, 0,
                                      stream>>>(x, n, c, hw, sums, sq);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void batch_norm_statistics(const double* sums, const double* sq, int64_t c,
                           float eps, float momentum, float* mean,
                           float* inv_std, float* running_mean,
                           float* running_var, cudaStream_t stream) {
  if (c == 0) return;
  batch_norm_statistics_kernel<<<
      static_cast<int>((c + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      sums, sq, c, eps, momentum, mean, inv_std, running_mean, running_var);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void batch_norm_normalize(const float* x, int64_t n, int64_t c, int64_t hw,
                          const float* mean, const float* inv_std,
                          const float* gamma, const float* beta, float* y,
                          cudaStream_t stream) {
  const int64_t total = n * c * hw;
  if (total == 0) return;
  batch_norm_normalize_kernel<<<ElementBlocks(total), kThreads, 0, stream>>>(
      x, total, c, hw, mean, inv_std, gamma, beta, y);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void batch_norm_gradient_sums(const float* dy, const float* x, int64_t n,
                              int64_t c, int64_t hw, const float* mean,
                              const float* inv_std, double* sums, float* dgamma,
                              float* dbeta, cudaStream_t stream) {
  if (c == 0) return;
  batch_norm_gradient_sums_kernel<<<static_cast<int>(c), kThreads, 0, stream>>>(
      dy, x, n, c, hw, mean, inv_std, sums, dgamma, dbeta);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void batch_norm_input_gradient(const float* dy, const float* x, int64_t n,
                               int64_t c, int64_t hw, const float* mean,
                               const float* inv_std, const float* gamma,
                               const double* sums, double m, float* dx,
                               cudaStream_t stream) {
  const int64_t total = n * c * hw;
  if (total == 0) return;
  batch_norm_input_gradient_kernel<<<ElementBlocks(total), kThreads, 0,
                                     stream>>>(dy, x, total, c, hw, mean,
                                               inv_std, gamma, sums, m, dx);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void bias_add(void* out, DType dtype, const float* bias, int64_t batch,
              int64_t channels, int64_t spatial, cudaStream_t stream) {
  const int64_t n = batch * channels * spatial;
  if (n == 0) return;
  WithElementType(dtype, [&](auto t) {
    using T = decltype(t);
    bias_add_kernel<T>
        <<<ElementwiseBlocks(n), kElementwiseThreads, 0, stream>>>(
            static_cast<T*>(out), bias, channels, spatial, n);
  });
  RINGLET_CUDA_CHECK_LAUNCH();
}

}  // namespace ringlet::nn::cuda_ops
