// torch.optim.Adam and AdamW (adam_optimizer.h has the arithmetic).
#include "nn/optim/adam_optimizer.h"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "nn/ops/optimizer_updates.h"
#include "nn/optim/optimizer_support.h"
#include "nn/optim/registry.h"

namespace ringlet::nn {
namespace {

// The factors of step t that every element shares, in double as PyTorch
// computes them on the host.
struct AdamFactors {
  float step_size;              // lr / (1 - b1^t)
  float bias_correction2_sqrt;  // sqrt(1 - b2^t)
  float decay;                  // AdamW: 1 - lr wd (decoupled); Adam: 1.
  float grad_decay;             // Adam: wd (added to g); AdamW: 0.
};

AdamFactors FactorsOf(const AdamOptions& o, int64_t step) {
  const double t = static_cast<double>(step);
  const bool decoupled = o.decoupled;
  return {static_cast<float>(o.lr / (1.0 - std::pow(o.beta1, t))),
          static_cast<float>(std::sqrt(1.0 - std::pow(o.beta2, t))),
          decoupled ? 1.0f - o.lr * o.weight_decay : 1.0f,
          decoupled ? 0.0f : o.weight_decay};
}

}  // namespace

void AdamUpdateAll(const std::vector<Tensor*>& values,
                   const std::vector<const Tensor*>& grads,
                   const std::vector<Tensor*>& exp_avgs,
                   const std::vector<Tensor*>& exp_avg_sqs,
                   const AdamOptions& options, int64_t step,
                   const NonFiniteCounts* skip_if_any) {
  CheckUpdateLists("adam", values, grads, {exp_avgs, exp_avg_sqs});
  if (values.empty()) return;
  if (step < 1) throw std::invalid_argument("adam: steps count from 1");
  const AdamFactors f = FactorsOf(options, step);
  kernels::adam_update_all.For(values.front()->device())(
      values, grads, exp_avgs, exp_avg_sqs,
      {options.beta1, options.beta2, options.eps, f.step_size,
       f.bias_correction2_sqrt, f.decay, f.grad_decay},
      skip_if_any);
}

namespace {

class AdamOptimizer : public Optimizer {
 public:
  AdamOptimizer(const AdamOptions& o, std::vector<Tensor*> values,
                std::vector<std::string> names)
      : options_(o),
        values_(std::move(values)),
        names_(std::move(names)),
        // t on the host: the bias corrections are host arithmetic.
        step_(Tensor::FromVector({1}, {0.0f})) {
    for (Tensor* v : values_) {  // Zeros.
      exp_avg_.emplace_back(v->shape(), v->device());
      exp_avg_sq_.emplace_back(v->shape(), v->device());
    }
  }
  void Step(const std::vector<const Tensor*>& grads,
            const NonFiniteCounts* skip_if_any) override {
    // A checkpoint holds t as a float: exact up to 2^24 steps.
    const int64_t t = static_cast<int64_t>(std::llround(step_.data()[0])) + 1;
    AdamUpdateAll(values_, grads, Pointers(&exp_avg_), Pointers(&exp_avg_sq_),
                  options_, t, skip_if_any);
    step_.data()[0] = static_cast<float>(t);
  }
  void set_lr(float lr) override { options_.lr = lr; }
  std::vector<std::pair<std::string, Tensor*>> State() override {
    std::vector<std::pair<std::string, Tensor*>> state;
    for (size_t i = 0; i < exp_avg_.size(); ++i) {
      state.emplace_back(names_[i] + ".exp_avg", &exp_avg_[i]);
    }
    for (size_t i = 0; i < exp_avg_sq_.size(); ++i) {
      state.emplace_back(names_[i] + ".exp_avg_sq", &exp_avg_sq_[i]);
    }
    state.emplace_back(options_.decoupled ? "adamw.step" : "adam.step", &step_);
    return state;
  }

 private:
  AdamOptions options_;
  std::vector<Tensor*> values_;
  std::vector<std::string> names_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  Tensor step_;
};

OptimizerSpec AdamSpec(const std::string& name) {
  OptimizerSpec spec;
  spec.name = name;
  spec.summary =
      name == "adam" ? "adam (torch.optim.Adam)" : "adamw (torch.optim.AdamW)";
  spec.reads = {{"beta1", 0.9f}, {"beta2", 0.999f}, {"eps", 1e-8f}};
  spec.default_lr = 0.001f;
  spec.default_lr_source = "torch's default for " + name;
  spec.weight_decay = name == "adam" ? "an L2 penalty added to each gradient"
                                     : "the decoupled decay";
  spec.make = [](const OptimizerOptions& o, std::vector<Tensor*> values,
                 std::vector<std::string> names) {
    AdamOptions adam;
    adam.lr = o.lr;
    adam.beta1 = o.beta1;
    adam.beta2 = o.beta2;
    adam.eps = o.eps;
    adam.weight_decay = o.weight_decay;
    adam.decoupled = o.name == "adamw";
    return MakeAdam(adam, std::move(values), std::move(names));
  };
  return spec;
}

}  // namespace

std::unique_ptr<Optimizer> MakeAdam(const AdamOptions& options,
                                    std::vector<Tensor*> values,
                                    std::vector<std::string> names) {
  const std::string op = options.decoupled ? "adamw" : "adam";
  CheckAboveZero(op, "lr", options.lr);
  CheckInUnit(op, "beta1", options.beta1);
  CheckInUnit(op, "beta2", options.beta2);
  CheckAboveZero(op, "eps", options.eps);
  CheckInUnit(op, "weight decay", options.weight_decay);
  CheckOneNameEach(op, values.size(), names.size());
  return std::make_unique<AdamOptimizer>(options, std::move(values),
                                         std::move(names));
}

namespace {

OptimizerSpec AdamOnly() { return AdamSpec("adam"); }
OptimizerSpec AdamWSpec() { return AdamSpec("adamw"); }

}  // namespace

RINGLET_REGISTER_OPTIMIZER(AdamOnly);
RINGLET_REGISTER_OPTIMIZER(AdamWSpec);

}  // namespace ringlet::nn
