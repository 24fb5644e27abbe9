// Batch normalisation over the channels of [N, C, H, W], as PyTorch's
// BatchNorm2d (which d2l's concise ResNet uses): training normalises with
// the batch's mean and biased variance and updates running averages (with
// the unbiased variance); inference uses the running averages.
#ifndef RINGLET_NN_OPS_BATCH_NORM_H_
#define RINGLET_NN_OPS_BATCH_NORM_H_

#include <cstdint>
#include <functional>

#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

struct BatchNormStats {
  Tensor running_mean;  // [C], starts at 0
  Tensor running_var;   // [C], starts at 1
  float momentum = 0.1f;
  float eps = 1e-5f;
};

// What backward needs from a training forward pass, on either device: the
// input, from which x_hat = (x - mean) inv_std is recomputed (as cuDNN
// does: a bfloat16 input is half the bytes of a float32 x_hat, and one
// pass fewer to write), and the batch's per-channel statistics.
struct BatchNormCache {
  Tensor input;       // [N, C, H, W]
  Tensor mean;        // [C]
  Tensor inv_std;     // [C]
  int64_t count = 0;  // Values per channel normalised together (all replicas)
  float eps = 0;      // The forward's (cuDNN's backward asks for it)
  // From the epilogue (BatchNormEpilogue): the ReLU's output, whose sign
  // masks the output gradient, and whether a residual was added (backward
  // then returns its gradient too).
  Tensor relu_output;
  bool added_residual = false;

  // True once a training-mode forward filled it, on either device.
  bool filled() const { return input.defined(); }
};

// What the forward pass does to batch norm's output before writing it:
// y = bn(x), plus `residual` when defined, then max(., 0) when `relu` (a
// residual unit's last three ops, or the stem's two). On CPU devices in
// the same pass over memory as the normalisation, on GPUs in one pass over
// cuDNN's output (and the backward masks the gradient in its own passes);
// the values are the separate ops' (Add, ReluForward, in the input's type,
// rounded where they round), bit for bit: fusion changes the passes over
// memory, never a number.
struct BatchNormEpilogue {
  Tensor residual;  // x's shape; either type (Add's rules when they differ)
  bool relu = false;
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
                               const ReplicaSum& replica_sum = nullptr,
                               const BatchNormEpilogue& epilogue = {});
Tensor BatchNorm2dEvalForward(const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const BatchNormStats& stats,
                              const BatchNormEpilogue& epilogue = {});

struct BatchNormGrads {
  Tensor dx, dgamma, dbeta;
  // When the forward added a residual: its gradient (the output gradient,
  // masked by the ReLU when there was one), in the output gradient's type.
  Tensor d_residual;
};
// The gradient with respect to the forward's inputs, through its epilogue.
// dgamma and dbeta are this replica's share (a gradient allreduce sums
// them); dx uses the batch-wide sums when `replica_sum` is set.
BatchNormGrads BatchNorm2dBackward(const Tensor& dy, const Tensor& gamma,
                                   const BatchNormCache& cache,
                                   const ReplicaSum& replica_sum = nullptr);

// The epilogue as separate ops on y, the output of a normalisation run
// without one (in place where the residual has y's type: AddReluInPlace),
// and `cache` (may be null: evaluation) told what it did. For kernels
// that do not fuse it.
Tensor ApplyBatchNormEpilogue(Tensor y, const BatchNormEpilogue& epilogue,
                              BatchNormCache* cache);

// Implementations per device type (kernel_table.h), given checked shapes
// on one device and a filled cache for the backward.
namespace kernels {
inline KernelTable<Tensor(const Tensor& x, const Tensor& gamma,
                          const Tensor& beta, BatchNormStats* stats,
                          BatchNormCache* cache, const ReplicaSum& replica_sum,
                          const BatchNormEpilogue& epilogue)>
    batch_norm2d_train_forward{"batchnorm2d"};
inline KernelTable<Tensor(const Tensor& x, const Tensor& gamma,
                          const Tensor& beta, const BatchNormStats& stats,
                          const BatchNormEpilogue& epilogue)>
    batch_norm2d_eval_forward{"batchnorm2d"};
inline KernelTable<BatchNormGrads(const Tensor& dy, const Tensor& gamma,
                                  const BatchNormCache& cache,
                                  const ReplicaSum& replica_sum)>
    batch_norm2d_backward{"batchnorm2d backward"};
}  // namespace kernels

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_BATCH_NORM_H_
