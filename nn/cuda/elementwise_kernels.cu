// nn's own CUDA kernels (see elementwise_kernels.h). Grid-stride loops, so
// one launch shape serves every size. Compiled in CI (no GPU there): the
// tests in elementwise_kernels_test.cc check them against the CPU ops
// wherever a GPU is present (they passed on an H100, docs/gpu.md).
#include <cuda_bf16.h>

#include "nn/cuda/block_sum.cuh"
#include "nn/cuda/cuda_check.h"
#include "nn/cuda/elementwise_kernels.h"
#include "nn/cuda/float_types.cuh"

namespace ringlet::nn::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

int Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

#define RINGLET_GRID_STRIDE_LOOP(i, n)                                      \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

// Kernels written once for float32 and bfloat16 (float_types.cuh): each
// value in float32, rounded once to T.
template <typename T>
__global__ void fill_kernel(T* out, int64_t n, T value) {
  RINGLET_GRID_STRIDE_LOOP(i, n) { out[i] = value; }
}

__global__ void float_to_bf16_forward_kernel(const float* in,
                                             __nv_bfloat16* out, int64_t n) {
  RINGLET_GRID_STRIDE_LOOP(i, n) { out[i] = __float2bfloat16_rn(in[i]); }
}

__global__ void bf16_to_float_forward_kernel(const __nv_bfloat16* in,
                                             float* out, int64_t n) {
  RINGLET_GRID_STRIDE_LOOP(i, n) { out[i] = __bfloat162float(in[i]); }
}

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* out, int64_t n) {
  RINGLET_GRID_STRIDE_LOOP(i, n) {
    out[i] = FromFloat<T>(ToFloat(a[i]) + ToFloat(b[i]));
  }
}

template <typename T>
__global__ void bias_add_kernel(T* out, const float* bias, int64_t channels,
                                int64_t spatial, int64_t n) {
  RINGLET_GRID_STRIDE_LOOP(i, n) {
    out[i] = FromFloat<T>(ToFloat(out[i]) + bias[(i / spatial) % channels]);
  }
}

// Above zero: 0x0001 to 0x7F80 (+infinity), not -0 nor a NaN (the CPU's
// Bf16Positive, nn/ops/activation.cc).
__device__ bool bf16_positive(uint16_t bits) {
  return static_cast<uint16_t>(bits - 1) < 0x7F80;
}

__global__ void relu_bf16_forward_kernel(const uint16_t* in, uint16_t* out,
                                         int64_t n) {
  RINGLET_GRID_STRIDE_LOOP(i, n) { out[i] = bf16_positive(in[i]) ? in[i] : 0; }
}

__global__ void relu_bf16_backward_kernel(const uint16_t* y, const uint16_t* dy,
                                          uint16_t* dx, int64_t n) {
  RINGLET_GRID_STRIDE_LOOP(i, n) { dx[i] = bf16_positive(y[i]) ? dy[i] : 0; }
}

// A batch norm's epilogue (nn/ops/batch_norm.h) in one pass: y += r
// where r is given (the sum rounded to T, as the separate add), then ReLU
// where asked (its result is its input or +0, so no rounding); the
// separate ops' values.
template <typename T>
__global__ void add_relu_in_place_kernel(T* y, const T* r, bool relu,
                                         int64_t n) {
  RINGLET_GRID_STRIDE_LOOP(i, n) {
    float v = ToFloat(y[i]);
    if (r != nullptr) v = ToFloat(FromFloat<T>(v + ToFloat(r[i])));
    if (relu) v = v > 0.0f ? v : 0.0f;
    y[i] = FromFloat<T>(v);
  }
}

__global__ void add_scaled_forward_kernel(float* a, const float* b, float scale,
                                          int64_t n) {
  RINGLET_GRID_STRIDE_LOOP(i, n) { a[i] += scale * b[i]; }
}

__global__ void divide_forward_kernel(float* x, int64_t n, float divisor) {
  RINGLET_GRID_STRIDE_LOOP(i, n) { x[i] /= divisor; }
}

__global__ void scale_forward_kernel(float* x, int64_t n, float factor) {
  RINGLET_GRID_STRIDE_LOOP(i, n) { x[i] *= factor; }
}

// kThreads threads, kSumOfSquaresBlocks blocks; a fixed reduction tree.
__global__ void sum_of_squares_partials_kernel(const float* x, int64_t n,
                                               double* partials) {
  __shared__ double shared[kThreads];
  double mine = 0;
  RINGLET_GRID_STRIDE_LOOP(i, n) {
    const double v = x[i];
    mine += v * v;
  }
  const double total = BlockSum<kThreads>(mine, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Tensor blockIdx.y of `list`, element for element as the CPU Sgd.
__global__ void sgd_update_each_kernel(SgdTensors list, float lr,
                                       float momentum, float weight_decay,
                                       const unsigned int* skip) {
  if (skip != nullptr && *skip != 0) return;
  float* p = list.param[blockIdx.y];
  const float* g = list.grad[blockIdx.y];
  float* v = list.velocity[blockIdx.y];
  const int64_t n = list.size[blockIdx.y];
  RINGLET_GRID_STRIDE_LOOP(i, n) {
    if (v == nullptr) {
      p[i] -= lr * (g[i] + weight_decay * p[i]);
    } else {
      v[i] = momentum * v[i] + g[i] + weight_decay * p[i];
      p[i] -= lr * v[i];
    }
  }
}

// Tensor blockIdx.y of `list`, element for element as the CPU Adam.
__global__ void adam_update_each_kernel(AdamTensors list, float beta1,
                                        float beta2, float eps, float step_size,
                                        float bc2_sqrt, float decay,
                                        float grad_decay,
                                        const unsigned int* skip) {
  if (skip != nullptr && *skip != 0) return;
  float* p = list.param[blockIdx.y];
  const float* g = list.grad[blockIdx.y];
  float* m = list.exp_avg[blockIdx.y];
  float* v = list.exp_avg_sq[blockIdx.y];
  const int64_t n = list.size[blockIdx.y];
  RINGLET_GRID_STRIDE_LOOP(i, n) {
    const float grad = g[i] + grad_decay * p[i];
    const float param = p[i] * decay;
    const float mean = beta1 * m[i] + (1.0f - beta1) * grad;
    const float square = beta2 * v[i] + (1.0f - beta2) * grad * grad;
    m[i] = mean;
    v[i] = square;
    p[i] = param - step_size * (mean / (sqrtf(square) / bc2_sqrt + eps));
  }
}

__global__ void fill_each_kernel(TensorList list, float value) {
  float* out = list.data[blockIdx.y];
  const int64_t n = list.size[blockIdx.y];
  RINGLET_GRID_STRIDE_LOOP(i, n) { out[i] = value; }
}

// Blocks per listed tensor: enough for the largest, about kMaxBlocks in all.
dim3 ListGrid(const int64_t* sizes, int count) {
  int64_t largest = 0;
  for (int t = 0; t < count; ++t)
    largest = sizes[t] > largest ? sizes[t] : largest;
  const int64_t share = kMaxBlocks / count;
  const int64_t wanted = largest > 0 ? Blocks(largest) : 1;  // Never 0.
  return dim3(static_cast<unsigned int>(
                  wanted < share ? wanted : (share > 0 ? share : 1)),
              static_cast<unsigned int>(count));
}

// Tensor blockIdx.y of `list`; one atomic per block, not per element (the
// count is almost always 0).
__global__ void count_nonfinite_each_kernel(TensorList list,
                                            unsigned int* counts,
                                            unsigned int* total) {
  __shared__ unsigned int block_count;
  if (threadIdx.x == 0) block_count = 0;
  __syncthreads();
  const float* x = list.data[blockIdx.y];
  const int64_t n = list.size[blockIdx.y];
  unsigned int mine = 0;
  RINGLET_GRID_STRIDE_LOOP(i, n) { mine += isfinite(x[i]) ? 0u : 1u; }
  if (mine > 0) atomicAdd(&block_count, mine);
  __syncthreads();
  if (threadIdx.x == 0 && block_count > 0) {
    atomicAdd(&counts[blockIdx.y], block_count);
    atomicAdd(total, block_count);
  }
}

}  // namespace

void add_scaled_forward(float* a, const float* b, float scale, int64_t n,
                        cudaStream_t stream) {
  if (n == 0) return;
  add_scaled_forward_kernel<<<Blocks(n), kThreads, 0, stream>>>(a, b, scale, n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void divide_forward(float* x, int64_t n, float divisor, cudaStream_t stream) {
  if (n == 0) return;
  divide_forward_kernel<<<Blocks(n), kThreads, 0, stream>>>(x, n, divisor);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void scale_forward(float* x, int64_t n, float factor, cudaStream_t stream) {
  if (n == 0) return;
  scale_forward_kernel<<<Blocks(n), kThreads, 0, stream>>>(x, n, factor);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void sum_of_squares_partials(const float* x, int64_t n, double* partials,
                             cudaStream_t stream) {
  // Launched for n == 0 too: the partials are then zeros.
  sum_of_squares_partials_kernel<<<kSumOfSquaresBlocks, kThreads, 0, stream>>>(
      x, n, partials);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void count_nonfinite_each(const TensorList& list, unsigned int* counts,
                          unsigned int* total, cudaStream_t stream) {
  if (list.count == 0) return;
  count_nonfinite_each_kernel<<<ListGrid(list.size, list.count), kThreads, 0,
                                stream>>>(list, counts, total);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void sgd_update_each(const SgdTensors& list, float lr, float momentum,
                     float weight_decay, const unsigned int* skip,
                     cudaStream_t stream) {
  if (list.count == 0) return;
  sgd_update_each_kernel<<<ListGrid(list.size, list.count), kThreads, 0,
                           stream>>>(list, lr, momentum, weight_decay, skip);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void adam_update_each(const AdamTensors& list, float beta1, float beta2,
                      float eps, float step_size, float bias_correction2_sqrt,
                      float decay, float grad_decay, const unsigned int* skip,
                      cudaStream_t stream) {
  if (list.count == 0) return;
  adam_update_each_kernel<<<ListGrid(list.size, list.count), kThreads, 0,
                            stream>>>(list, beta1, beta2, eps, step_size,
                                      bias_correction2_sqrt, decay, grad_decay,
                                      skip);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void fill_each(const TensorList& list, float value, cudaStream_t stream) {
  if (list.count == 0) return;
  fill_each_kernel<<<ListGrid(list.size, list.count), kThreads, 0, stream>>>(
      list, value);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void fill_forward(float* out, int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return;
  fill_kernel<float><<<Blocks(n), kThreads, 0, stream>>>(out, n, value);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void fill_bf16_forward(uint16_t* out, int64_t n, float value,
                       cudaStream_t stream) {
  if (n == 0) return;
  fill_kernel<__nv_bfloat16><<<Blocks(n), kThreads, 0, stream>>>(
      reinterpret_cast<__nv_bfloat16*>(out), n, __float2bfloat16_rn(value));
  RINGLET_CUDA_CHECK_LAUNCH();
}

void float_to_bf16_forward(const float* in, uint16_t* out, int64_t n,
                           cudaStream_t stream) {
  float_to_bf16_forward_kernel<<<Blocks(n), kThreads, 0, stream>>>(
      in, reinterpret_cast<__nv_bfloat16*>(out), n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void bf16_to_float_forward(const uint16_t* in, float* out, int64_t n,
                           cudaStream_t stream) {
  bf16_to_float_forward_kernel<<<Blocks(n), kThreads, 0, stream>>>(
      reinterpret_cast<const __nv_bfloat16*>(in), out, n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void add_forward(const float* a, const float* b, float* out, int64_t n,
                 cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<float><<<Blocks(n), kThreads, 0, stream>>>(a, b, out, n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void bias_add_forward(float* out, const float* bias, int64_t batch,
                      int64_t channels, int64_t spatial, cudaStream_t stream) {
  const int64_t n = batch * channels * spatial;
  if (n == 0) return;
  bias_add_kernel<float>
      <<<Blocks(n), kThreads, 0, stream>>>(out, bias, channels, spatial, n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void bias_add_bf16_forward(uint16_t* out, const float* bias, int64_t batch,
                           int64_t channels, int64_t spatial,
                           cudaStream_t stream) {
  const int64_t n = batch * channels * spatial;
  if (n == 0) return;
  bias_add_kernel<__nv_bfloat16><<<Blocks(n), kThreads, 0, stream>>>(
      reinterpret_cast<__nv_bfloat16*>(out), bias, channels, spatial, n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void relu_bf16_forward(const uint16_t* in, uint16_t* out, int64_t n,
                       cudaStream_t stream) {
  if (n == 0) return;
  relu_bf16_forward_kernel<<<Blocks(n), kThreads, 0, stream>>>(in, out, n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void add_relu_in_place(float* y, const float* r, bool relu, int64_t n,
                       cudaStream_t stream) {
  if (n == 0) return;
  add_relu_in_place_kernel<float>
      <<<Blocks(n), kThreads, 0, stream>>>(y, r, relu, n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void add_relu_bf16_in_place(uint16_t* y, const uint16_t* r, bool relu,
                            int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_relu_in_place_kernel<__nv_bfloat16><<<Blocks(n), kThreads, 0, stream>>>(
      reinterpret_cast<__nv_bfloat16*>(y),
      reinterpret_cast<const __nv_bfloat16*>(r), relu, n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void relu_bf16_backward(const uint16_t* y, const uint16_t* dy, uint16_t* dx,
                        int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  relu_bf16_backward_kernel<<<Blocks(n), kThreads, 0, stream>>>(y, dy, dx, n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void add_bf16_forward(const uint16_t* a, const uint16_t* b, uint16_t* out,
                      int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<__nv_bfloat16><<<Blocks(n), kThreads, 0, stream>>>(
      reinterpret_cast<const __nv_bfloat16*>(a),
      reinterpret_cast<const __nv_bfloat16*>(b),
      reinterpret_cast<__nv_bfloat16*>(out), n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void sgd_update_forward(float* param, const float* grad, float* velocity,
                        int64_t n, float lr, float momentum, float weight_decay,
                        const unsigned int* skip, cudaStream_t stream) {
  if (n == 0) return;
  SgdTensors one;  // A list of one: the same kernel as a whole model's.
  one.param[0] = param;
  one.grad[0] = grad;
  one.velocity[0] = momentum == 0.0f ? nullptr : velocity;
  one.size[0] = n;
  one.count = 1;
  sgd_update_each(one, lr, momentum, weight_decay, skip, stream);
}

}  // namespace ringlet::nn::cuda
