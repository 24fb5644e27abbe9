#include "nn/cuda/cuda_check.h"
#include "nn/ops/cuda/loss_kernels.h"

namespace ringlet::nn::cuda_ops {
namespace {

__global__ void softmax_cross_entropy_forward_kernel(
    const float* logits, const int32_t* labels, int64_t n, int64_t k,
    float scale, float* dlogits, double* row_loss, int32_t* row_correct) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const float* row = logits + i * k;
    float* grad = dlogits + i * k;
    const int32_t label = labels[i];
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j) best = row[j] > row[best] ? j : best;
    row_correct[i] = best == label ? 1 : 0;
    const float max = row[best];
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += expf(row[j] - max);
    const double log_sum = log(sum);
    row_loss[i] = log_sum - (row[label] - max);
    for (int64_t j = 0; j < k; ++j) {
      const double p = exp(row[j] - max - log_sum);
      grad[j] = static_cast<float>(p - (j == label ? 1.0 : 0.0)) * scale;
    }
  }
}

}  // namespace

void softmax_cross_entropy_forward(const float* logits, const int32_t* labels,
                                   int64_t n, int64_t k, float scale,
                                   float* dlogits, double* row_loss,
                                   int32_t* row_correct, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = 128;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  softmax_cross_entropy_forward_kernel<<<
      static_cast<int>(blocks < 4096 ? blocks : 4096), kThreads, 0, stream>>>(
      logits, labels, n, k, scale, dlogits, row_loss, row_correct);
  RINGLET_CUDA_CHECK_LAUNCH();
}

}  // namespace ringlet::nn::cuda_ops
