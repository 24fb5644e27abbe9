// Per-channel kernels on GPUs, shared by convolutions, linear layers and
// batch norm: the bias added per channel, synchronised batch norm's
// kernels (cuDNN's batch norm computes each replica's own statistics and
// cannot take the whole batch's) and the convolution bias gradient. Per-channel
// sums are doubles, as on the CPU, added in a fixed order (batch norm's:
// one block per channel; the bias gradient's: see channel_sums_float), so
// results do not change from run to run. Tensors are
// [n, c, hw] in NCHW order; every call is queued on `stream`.
#ifndef RINGLET_NN_OPS_CUDA_CHANNEL_KERNELS_H_
#define RINGLET_NN_OPS_CUDA_CHANNEL_KERNELS_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "nn/dtype.h"

namespace ringlet::nn::cuda_ops {

// out[i, ch, s] += bias[ch] over `out` of [batch, channels, spatial]
// elements of `dtype` (bfloat16: each sum in float32, rounded once).
void bias_add(void* out, DType dtype, const float* bias, int64_t batch,
              int64_t channels, int64_t spatial, cudaStream_t stream);

// sums[ch] = sum of x over channel ch (ch < c); sums[c] = n * hw.
void channel_sums(const float* x, int64_t n, int64_t c, int64_t hw,
                  double* sums, cudaStream_t stream);

// out[ch] = sum of x over channel ch, as a float (a convolution's bias
// gradient from its output gradient). Two passes: many blocks per channel,
// each over whole images, then one per channel over their partial sums in
// a fixed order (one block per channel took 45% of a LeNet step at batch
// 1024 on the first H100 profile: 6 blocks for 132 multiprocessors).
// `scratch` holds channel_sums_float_scratch_bytes(n, c, hw).
size_t channel_sums_float_scratch_bytes(int64_t n, int64_t c, int64_t hw);
void channel_sums_float(const float* x, int64_t n, int64_t c, int64_t hw,
                        double* scratch, float* out, cudaStream_t stream);

// sq[ch] = sum of (x - mean)^2 over channel ch, mean = sums[ch] / sums[c]
// (the batch-wide sums after the replicas' sum).
void channel_squared_deviations(const float* x, int64_t n, int64_t c,
                                int64_t hw, const double* sums, double* sq,
                                cudaStream_t stream);

// From the batch-wide sums: mean[ch], inv_std[ch] = 1 / sqrt(var + eps)
// with the biased variance, and the running averages updated with the
// unbiased one (as the CPU op and PyTorch do).
void batch_norm_statistics(const double* sums, const double* sq, int64_t c,
                           float eps, float momentum, float* mean,
                           float* inv_std, float* running_mean,
                           float* running_var, cudaStream_t stream);

// y = gamma (x - mean) inv_std + beta.
void batch_norm_normalize(const float* x, int64_t n, int64_t c, int64_t hw,
                          const float* mean, const float* inv_std,
                          const float* gamma, const float* beta, float* y,
                          cudaStream_t stream);

// With x_hat = (x - mean) inv_std: sums[ch] = sum dy, sums[c + ch] = sum
// dy x_hat over channel ch, and this replica's dbeta, dgamma (the same sums
// as floats).
void batch_norm_gradient_sums(const float* dy, const float* x, int64_t n,
                              int64_t c, int64_t hw, const float* mean,
                              const float* inv_std, double* sums, float* dgamma,
                              float* dbeta, cudaStream_t stream);

// dx = gamma inv_std (dy - sums[ch] / m - x_hat sums[c + ch] / m), from
// the batch-wide gradient sums over m values per channel.
void batch_norm_input_gradient(const float* dy, const float* x, int64_t n,
                               int64_t c, int64_t hw, const float* mean,
                               const float* inv_std, const float* gamma,
                               const double* sums, double m, float* dx,
                               cudaStream_t stream);

}  // namespace ringlet::nn::cuda_ops

#endif  // RINGLET_NN_OPS_CUDA_CHANNEL_KERNELS_H_
