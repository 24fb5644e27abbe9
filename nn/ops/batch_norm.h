// Batch normalisation over the channels of [N, C, H, W], as PyTorch's
// BatchNorm2d (which d2l's concise ResNet uses): training normalises with
// the batch's mean and biased variance and updates running averages (with
// the unbiased variance); inference uses the running averages.
#ifndef RINGLET_NN_OPS_BATCH_NORM_H_
#define RINGLET_NN_OPS_BATCH_NORM_H_

#include <cstdint>
#include <functional>

#include "nn/tensor.h"

namespace ringlet::nn {

struct BatchNormStats {
  Tensor running_mean;  // [C], starts at 0
  Tensor running_var;   // [C], starts at 1
  float momentum = 0.1f;
  float eps = 1e-5f;
};

// What backward needs from a training forward pass.
struct BatchNormCache {
  Tensor x_hat;       // [N, C, H, W], the normalised input (CPU)
  Tensor inv_std;     // [C]
  int64_t count = 0;  // Values per channel normalised together (all replicas)
  // On GPUs cuDNN's backward wants the input and the batch mean instead of
  // x_hat, and the forward's epsilon.
  Tensor input;   // [N, C, H, W] (CUDA)
  Tensor mean;    // [C] (CUDA)
  float eps = 0;  // (CUDA)

  // True once a training-mode forward filled it, on either device (the
  // first GPU run found BatchNorm2d asking for x_hat, which only the CPU
  // forward keeps, so no model with batch norm could train on a GPU).
  bool filled() const { return x_hat.defined() || input.defined(); }
};

// Synchronised batch norm: sums `count` per-channel values in place across
// the replicas of a data-parallel group, so every replica normalises with
// the statistics of the whole batch. Every replica must call it the same
// number of times with the same count. Null means this replica alone.
// `values` lie where the tensors do: host memory for CPU tensors, device
// memory of the tensors' GPU for GPU tensors (a collective's device
// buffer). They are ready when it is called (a GPU op waits for its own
// kernels first), and must hold the sums when it returns.
using ReplicaSum = std::function<void(double* values, int64_t count)>;

// gamma, beta [C]. Updates `stats` running averages; fills `cache`.
Tensor BatchNorm2dTrainForward(const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, BatchNormStats* stats,
                               BatchNormCache* cache,
                               const ReplicaSum& replica_sum = nullptr);
Tensor BatchNorm2dEvalForward(const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const BatchNormStats& stats);

struct BatchNormGrads {
  Tensor dx, dgamma, dbeta;
};
// dgamma and dbeta are this replica's share (a gradient allreduce sums
// them); dx uses the batch-wide sums when `replica_sum` is set.
BatchNormGrads BatchNorm2dBackward(const Tensor& dy, const Tensor& gamma,
                                   const BatchNormCache& cache,
                                   const ReplicaSum& replica_sum = nullptr);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_BATCH_NORM_H_
