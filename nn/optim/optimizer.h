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

// An optimizer chosen by name, as --optimizer and its flags give it (and a
// checkpoint records it): each registered optimizer turns these settings
// into options of its own (SgdOptions, AdamOptions in adam_optimizer.h,
// LionOptions in lion_optimizer.h), reading those its spec lists
// (OptimizerSpec::reads), with defaults of its own that the trainers apply
// (lion's beta2 is 0.99). A program that names its optimizer can call its
// Make function (MakeSgd, MakeAdam, MakeLion) with its options instead.
struct OptimizerOptions {
  std::string name = "sgd";  // A registered optimizer (OptimizerNames()).
  float lr = 0.1f;
  float weight_decay = 0.0f;
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

// The optimizer `options.name` of `values` (named `names`, same order), its
// state on their devices. Throws std::invalid_argument for an unknown name,
// a setting it does not read (momentum but for sgd) or one out of range
// (lr > 0; weight decay, momentum, betas in [0, 1); eps > 0).
std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options,
                                         std::vector<Tensor*> values,
                                         std::vector<std::string> names);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPTIM_OPTIMIZER_H_
