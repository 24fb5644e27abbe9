// The softmax cross-entropy kernel (no cuDNN or cuBLAS call covers it).
#ifndef RINGLET_NN_OPS_CUDA_LOSS_KERNELS_H_
#define RINGLET_NN_OPS_CUDA_LOSS_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace ringlet::nn::cuda_ops {

// One row of logits [n, k] per thread, as the CPU op computes it: row_loss
// = log sum exp(z - max) - (z[label] - max), dlogits = (softmax - onehot) *
// scale, row_correct = 1 when the first largest logit is the label's.
void softmax_cross_entropy_forward(const float* logits, const int32_t* labels,
                                   int64_t n, int64_t k, float scale,
                                   float* dlogits, double* row_loss,
                                   int32_t* row_correct, cudaStream_t stream);

}  // namespace ringlet::nn::cuda_ops

#endif  // RINGLET_NN_OPS_CUDA_LOSS_KERNELS_H_
