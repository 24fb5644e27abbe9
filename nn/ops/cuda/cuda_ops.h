// The CUDA implementations of nn's ops, called by the ops in nn/ops when
// their inputs are on a GPU (see nn/ops/dispatch.h); same contracts as the
// CPU ops of the same names. Work is queued on the device's stream.
//
// cuDNN: convolution, batch norm, pooling, ReLU; cuBLAS: linear; nn's own
// kernels: add, bias add, softmax cross-entropy, SGD's update. Shapes are
// checked by the callers in nn/ops before they dispatch here. Builds without
// CUDA link cuda_ops_without_cuda.cc (unreachable there: no tensor can be on
// a GPU).
#ifndef RINGLET_NN_OPS_CUDA_CUDA_OPS_H_
#define RINGLET_NN_OPS_CUDA_CUDA_OPS_H_

#include <cstdint>
#include <vector>

#include "nn/ops/batch_norm.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/linear.h"
#include "nn/ops/loss.h"
#include "nn/tensor.h"

namespace ringlet::nn::cuda_ops {

Tensor ReluForward(const Tensor& x);
Tensor ReluBackward(const Tensor& y, const Tensor& dy);
Tensor Add(const Tensor& a, const Tensor& b);
void AddInPlace(Tensor& a, const Tensor& b);
void AddScaledInPlace(Tensor& a, const Tensor& b, float scale);
void DivideInPlace(Tensor& x, float divisor);
// The tensors' non-finite counts then their sum, as n + 1 unsigned ints
// (in float storage), queued.
Tensor QueueCountNonFinite(const std::vector<const Tensor*>& tensors);
void ScaleInPlace(Tensor& x, float factor);
double SumOfSquares(const std::vector<const Tensor*>& tensors);
Tensor Conv2dForward(const Tensor& x, const Tensor& w, const Tensor& b,
                     const Conv2dParams& params);
Conv2dGrads Conv2dBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy, const Conv2dParams& params,
                           bool need_dx);
Tensor LinearForward(const Tensor& x, const Tensor& w, const Tensor& b);
LinearGrads LinearBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy);
Tensor AvgPool2dForward(const Tensor& x, int kernel, int stride);
Tensor AvgPool2dBackward(const Shape& x_shape, const Tensor& dy, int kernel,
                         int stride);
Tensor GlobalAvgPoolForward(const Tensor& x);
Tensor GlobalAvgPoolBackward(const Shape& x_shape, const Tensor& dy);
Tensor BatchNorm2dTrainForward(const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, BatchNormStats* stats,
                               BatchNormCache* cache,
                               const ReplicaSum& replica_sum);
Tensor BatchNorm2dEvalForward(const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const BatchNormStats& stats);
BatchNormGrads BatchNorm2dBackward(const Tensor& dy, const Tensor& gamma,
                                   const BatchNormCache& cache,
                                   const ReplicaSum& replica_sum);
// Queues the loss kernel: *dlogits, and *rows: n doubles (each row's
// loss) then n int32s (1 where the row's prediction is right), as 3n
// floats of storage. Labels are checked on the host first.
void QueueSoftmaxCrossEntropy(const Tensor& logits, const int32_t* labels,
                              Reduction reduction, Tensor* dlogits,
                              Tensor* rows);
// SgdUpdate on every listed tensor in one launch per kMaxListedTensors;
// `velocities` empty without momentum.
void SgdUpdateAll(const std::vector<Tensor*>& values,
                  const std::vector<const Tensor*>& grads,
                  const std::vector<Tensor*>& velocities, float lr,
                  float momentum, float weight_decay, const unsigned int* skip);
// One Adam or AdamW step (nn/optim/optimizer.h) on every listed tensor,
// one launch per kMaxListedTensors; the step's shared factors computed by
// the caller; nothing where `skip` (device memory, may be null) is non-zero.
void AdamUpdateAll(const std::vector<Tensor*>& values,
                   const std::vector<const Tensor*>& grads,
                   const std::vector<Tensor*>& exp_avgs,
                   const std::vector<Tensor*>& exp_avg_sqs, float beta1,
                   float beta2, float eps, float step_size,
                   float bias_correction2_sqrt, float decay, float grad_decay,
                   const unsigned int* skip);
// Every listed tensor set to 0, one launch per kMaxListedTensors.
void ZeroAll(const std::vector<Tensor*>& tensors);
// value -= lr * (grad + wd * value), or with momentum through velocity;
// nothing where `skip` (device memory, may be null) is non-zero.
void SgdUpdate(Tensor& value, const Tensor& grad, Tensor* velocity, float lr,
               float momentum, float weight_decay, const unsigned int* skip);

}  // namespace ringlet::nn::cuda_ops

#endif  // RINGLET_NN_OPS_CUDA_CUDA_OPS_H_
