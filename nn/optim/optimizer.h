// Optimizers behind one interface, as torch.optim: the trainers and
// DataParallel hold an Optimizer and never name one. Each registers itself
// by name from its own file (nn/optim/registry.h): sgd (sgd_optimizer.cc),
// adam and adamw (adam_optimizer.cc), lion (lion_optimizer.cc).
// On a GPU each step is one launch per 48 tensors (a listed kernel, as
// torch's foreach optimizers), and a step guarded by non-finite counts is
// skipped on the device.
#ifndef RINGLET_NN_OPTIM_OPTIMIZER_H_
#define RINGLET_NN_OPTIM_OPTIMIZER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/ops/non_finite.h"
#include "nn/optim/sgd.h"
#include "nn/tensor.h"

namespace ringlet::nn {

struct OptimizerOptions {
  std::string name = "sgd";  // A registered optimizer (OptimizerNames()).
  float lr = 0.1f;
  float weight_decay = 0.0f;
  // Each optimizer reads some of these (OptimizerSpec::reads), with
  // defaults of its own that the trainers apply (lion's beta2 is 0.99).
  float momentum = 0.0f;  // sgd.
  float beta1 = 0.9f;     // adam, adamw, lion.
  float beta2 = 0.999f;
  float eps = 1e-8f;
};

// SGD with `sgd`'s rate, momentum and weight decay.
inline OptimizerOptions FromSgd(const SgdOptions& sgd) {
  OptimizerOptions o;
  o.lr = sgd.lr;
  o.momentum = sgd.momentum;
  o.weight_decay = sgd.weight_decay;
  return o;
}

// The optimizer names MakeOptimizer takes (nn/optim/registry.h), sorted.
std::vector<std::string> OptimizerNames();

// One optimizer step of Adam or AdamW on each listed tensor, all on one
// device; `step` is t, counted from 1. Throws std::invalid_argument for lists
// of different lengths, ShapeError and DeviceError as the ops do.
void AdamUpdateAll(const std::vector<Tensor*>& values,
                   const std::vector<const Tensor*>& grads,
                   const std::vector<Tensor*>& exp_avgs,
                   const std::vector<Tensor*>& exp_avg_sqs,
                   const OptimizerOptions& options, int64_t step,
                   const NonFiniteCounts* skip_if_any = nullptr);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Updates the parameters by `grads` (the parameters' order and shapes).
  // With `skip_if_any`, nothing changes (state included) when it counted a
  // non-finite value; on a GPU that is decided on the device.
  virtual void Step(const std::vector<const Tensor*>& grads,
                    const NonFiniteCounts* skip_if_any = nullptr) = 0;
  // The step for gradients that are sums over `divisor` samples, whose mean
  // is grads / divisor (the from-scratch chapter's sgd(params, lr,
  // batch_size)). `grads` may be changed: this default divides them in
  // place, then steps; plain SGD folds 1 / divisor into its rate instead.
  virtual void StepOnSum(const std::vector<Tensor*>& grads, double divisor,
                         const NonFiniteCounts* skip_if_any = nullptr);
  virtual void set_lr(float lr) = 0;
  // The state a checkpoint saves, named after the parameters:
  // "w.momentum" (sgd with momentum), "w.exp_avg" and "w.exp_avg_sq" then
  // "adamw.step" (a host tensor of one value: t). Empty for plain SGD.
  virtual std::vector<std::pair<std::string, Tensor*>> State() = 0;
};

// An optimizer of `values` (named `names`, same order), its state on their
// devices. Throws std::invalid_argument for an unknown name or a value out
// of range (lr > 0; weight decay, momentum, betas in [0, 1); eps > 0).
std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options,
                                         std::vector<Tensor*> values,
                                         std::vector<std::string> names);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPTIM_OPTIMIZER_H_
