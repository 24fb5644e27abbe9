// Batch normalisation over the channels of [N, C, H, W], as PyTorch's
// BatchNorm2d (which d2l's concise ResNet uses): training normalises with
// the batch's mean and biased variance and updates running averages (with
// the unbiased variance); inference uses the running averages.
#ifndef RINGLET_NN_OPS_BATCH_NORM_H_
#define RINGLET_NN_OPS_BATCH_NORM_H_

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
  Tensor x_hat;    // [N, C, H, W], the normalised input
  Tensor inv_std;  // [C]
};

// gamma, beta [C]. Updates `stats` running averages; fills `cache`.
Tensor BatchNorm2dTrainForward(const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, BatchNormStats* stats,
                               BatchNormCache* cache);
Tensor BatchNorm2dEvalForward(const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const BatchNormStats& stats);

struct BatchNormGrads {
  Tensor dx, dgamma, dbeta;
};
BatchNormGrads BatchNorm2dBackward(const Tensor& dy, const Tensor& gamma,
                                   const BatchNormCache& cache);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_BATCH_NORM_H_
