// Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_: the
// L2 norm over every gradient together; when it exceeds max_norm, all are
// scaled by max_norm / (norm + 1e-6).
#ifndef RINGLET_NN_OPTIM_GRAD_CLIP_H_
#define RINGLET_NN_OPTIM_GRAD_CLIP_H_

#include <cstdint>
#include <vector>

#include "nn/tensor.h"

namespace ringlet::nn {

// The factor that brings a gradient of norm `norm` to at most `max_norm`:
// 1 when it is already within, else max_norm / (norm + 1e-6).
double ClipCoefficient(double norm, double max_norm);

// The global L2 norm of `values` (summed in double, in a fixed order, so
// every replica holding the same gradients gets the same bits).
double GlobalNorm(const float* values, int64_t count);
double GlobalNorm(const std::vector<const Tensor*>& grads);  // Any device.

// Scales `grads` (all on one device, CPU or GPU) in place so their global
// norm is at most `max_norm`; returns the norm before clipping. max_norm
// must be above 0 (std::invalid_argument). On a GPU the host waits once,
// for the norm.
double ClipGradNorm(const std::vector<Tensor*>& grads, double max_norm);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPTIM_GRAD_CLIP_H_
