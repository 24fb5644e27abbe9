// nn's own small CUDA kernels: the ops cuDNN and cuBLAS do not cover.
// Each kernel `foo_forward_kernel` / `foo_backward_kernel` has a launcher
// of the same name without `_kernel` that takes the device's stream and
// checks the launch. Pointers are device memory; n may be 0.
#ifndef RINGLET_NN_CUDA_ELEMENTWISE_KERNELS_H_
#define RINGLET_NN_CUDA_ELEMENTWISE_KERNELS_H_

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

// bfloat16 (bits) ReLU as the CPU's: out[i] = in[i] where it is above
// zero, else 0; dx[i] = dy[i] where y[i] is above zero, else 0.
void relu_bf16_forward(const uint16_t* in, uint16_t* out, int64_t n,
                       cudaStream_t stream);
void relu_bf16_backward(const uint16_t* y, const uint16_t* dy, uint16_t* dx,
                        int64_t n, cudaStream_t stream);
// bfloat16 (bits): out[i] = a[i] + b[i] in float32, rounded once (out may
// be a or b).
void add_bf16_forward(const uint16_t* a, const uint16_t* b, uint16_t* out,
                      int64_t n, cudaStream_t stream);

// out[i] = a[i] + b[i] (out may be a or b).
// y[i] = ReLU(y[i] + r[i]) in one pass: r may be null (no add), relu
// false (no ReLU); bfloat16 rounds the sum once, as add_bf16_forward, and
// its ReLU is relu_bf16_forward's. A batch norm's epilogue.
void add_relu_in_place(float* y, const float* r, bool relu, int64_t n,
                       cudaStream_t stream);
void add_relu_bf16_in_place(uint16_t* y, const uint16_t* r, bool relu,
                            int64_t n, cudaStream_t stream);
void add_forward(const float* a, const float* b, float* out, int64_t n,
                 cudaStream_t stream);

// out[n, c, h, w] += bias[c] over an NCHW tensor.
void bias_add_forward(float* out, const float* bias, int64_t batch,
                      int64_t channels, int64_t spatial, cudaStream_t stream);
// The same over bfloat16 `out` (bits), each sum in float32 rounded once.
void bias_add_bf16_forward(uint16_t* out, const float* bias, int64_t batch,
                           int64_t channels, int64_t spatial,
                           cudaStream_t stream);

// The CPU Sgd's step (nn/optim/sgd.cc), element for element:
// without momentum p -= lr * (g + wd * p); with momentum
// v = momentum * v + g + wd * p, p -= lr * v. `velocity` may be null when
// momentum is 0. With `skip` (device memory) non-null and *skip non-zero
// when the kernel runs, nothing changes: a step whose gradients turned out
// non-finite is skipped on the device, without the host reading anything.
void sgd_update_forward(float* param, const float* grad, float* velocity,
                        int64_t n, float lr, float momentum, float weight_decay,
                        const unsigned int* skip, cudaStream_t stream);

// a[i] += scale * b[i].
void add_scaled_forward(float* a, const float* b, float scale, int64_t n,
                        cudaStream_t stream);

// x[i] /= divisor.
void divide_forward(float* x, int64_t n, float divisor, cudaStream_t stream);

// x[i] *= factor.
void scale_forward(float* x, int64_t n, float factor, cudaStream_t stream);

// How many partial sums sum_of_squares_partials writes per tensor.
constexpr int kSumOfSquaresBlocks = 64;
// partials[b] = sum over the elements block b visits of x[i]^2, in double,
// for b < kSumOfSquaresBlocks (a fixed order: the same bits every run;
// the caller adds the partials up).
void sum_of_squares_partials(const float* x, int64_t n, double* partials,
                             cudaStream_t stream);

// Kernels over a list of tensors take up to this many, by value: a model's
// gradients in one launch or a few (as torch's foreach ops), not one
// launch per parameter.
constexpr int kMaxListedTensors = 48;
// Up to kMaxListedTensors device arrays and their sizes.
struct TensorList {
  float* data[kMaxListedTensors];
  int64_t size[kMaxListedTensors];
  int count = 0;  // 0 .. kMaxListedTensors.
};

// counts[t] += the number of elements of list tensor t that are nan or
// infinite, and *total += all of them, in one launch (counts and total are
// device memory the caller zeroed; the tensors are only read).
void count_nonfinite_each(const TensorList& list, unsigned int* counts,
                          unsigned int* total, cudaStream_t stream);

// out[i] = value on every listed array in one launch (zeroing a model's
// gradients).
void fill_each(const TensorList& list, float value, cudaStream_t stream);

// Up to kMaxListedTensors SGD updates (parameter, gradient, velocity or
// null, size), passed by value to one kernel.
struct SgdTensors {
  float* param[kMaxListedTensors];
  const float* grad[kMaxListedTensors];
  float* velocity[kMaxListedTensors];  // Null without momentum.
  int64_t size[kMaxListedTensors];
  int count = 0;  // 0 .. kMaxListedTensors.
};
// sgd_update_forward on every listed tensor (the same float operations, so
// the same bits), skipped as a whole when *skip (may be null) is non-zero.
void sgd_update_each(const SgdTensors& list, float lr, float momentum,
                     float weight_decay, const unsigned int* skip,
                     cudaStream_t stream);

// Up to kMaxListedTensors Adam updates (parameter, gradient, first and
// second moments, size), passed by value to one kernel.
struct AdamTensors {
  float* param[kMaxListedTensors];
  const float* grad[kMaxListedTensors];
  float* exp_avg[kMaxListedTensors];
  float* exp_avg_sq[kMaxListedTensors];
  int64_t size[kMaxListedTensors];
  int count = 0;  // 0 .. kMaxListedTensors.
};
// The CPU AdamUpdateAll's step (nn/optim/optimizer.cc), element for
// element: g' = g + grad_decay p; p *= decay; m = b1 m + (1 - b1) g';
// v = b2 v + (1 - b2) g'^2; p -= step_size m / (sqrt(v) / bc2_sqrt + eps).
// Skipped as a whole when *skip (may be null) is non-zero.
void adam_update_each(const AdamTensors& list, float beta1, float beta2,
                      float eps, float step_size, float bias_correction2_sqrt,
                      float decay, float grad_decay, const unsigned int* skip,
                      cudaStream_t stream);

}  // namespace ringlet::nn::cuda

#endif  // RINGLET_NN_CUDA_ELEMENTWISE_KERNELS_H_
