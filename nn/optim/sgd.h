// Stochastic gradient descent: p -= lr (g + weight_decay p), with optional
// momentum (v = momentum v + g + weight_decay p; p -= lr v), as
// torch.optim.SGD.
#ifndef RINGLET_NN_OPTIM_SGD_H_
#define RINGLET_NN_OPTIM_SGD_H_

#include <vector>

#include "nn/layers/module.h"
#include "nn/ops/non_finite.h"

namespace ringlet::nn {

struct SgdOptions {
  float lr = 0.1f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
};

// One update of `value` by `grad`; `velocity` is used (and must be defined,
// same shape) only with momentum. With `skip_if_any`, nothing changes when
// it counted a non-finite value; on a GPU that is decided on the device,
// so the host queues the step without waiting for the counts.
void SgdUpdate(Tensor& value, const Tensor& grad, Tensor* velocity,
               const SgdOptions& options,
               const NonFiniteCounts* skip_if_any = nullptr);

// SgdUpdate on each values[i] by grads[i] (and velocities[i], which is
// empty without momentum), all on one device: on a GPU one launch for up to
// 48 tensors instead of one each (a training step's update of a whole
// model), the same numbers. Throws std::invalid_argument for lists of
// different lengths, ShapeError and DeviceError as SgdUpdate.
void SgdUpdateAll(const std::vector<Tensor*>& values,
                  const std::vector<const Tensor*>& grads,
                  const std::vector<Tensor*>& velocities,
                  const SgdOptions& options,
                  const NonFiniteCounts* skip_if_any = nullptr);

class Sgd {
 public:
  // Throws std::invalid_argument for a non-positive learning rate or a
  // momentum or weight decay outside [0, 1).
  Sgd(std::vector<Parameter*> params, const SgdOptions& options);
  // With `skip_if_any`, as SgdUpdate: no change if it counted a non-finite
  // value (decided on the device on a GPU).
  void Step(const NonFiniteCounts* skip_if_any = nullptr);
  void ZeroGrad();
  void set_lr(float lr) { options_.lr = lr; }
  // The momentum buffers, one per parameter in order; empty without
  // momentum. Checkpoints save and restore them.
  std::vector<Tensor>& velocity() { return velocity_; }

 private:
  std::vector<Parameter*> params_;
  SgdOptions options_;
  std::vector<Tensor> velocity_;
};

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPTIM_SGD_H_
