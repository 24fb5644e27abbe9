// Lion (lion_optimizer.h has the arithmetic; the kernels are
// nn/ops/lion_update.h).
#include "nn/optim/lion_optimizer.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/ops/lion_update.h"
#include "nn/optim/optimizer_support.h"
#include "nn/optim/registry.h"

namespace ringlet::nn {
namespace {

class LionOptimizer : public Optimizer {
 public:
  LionOptimizer(const LionOptions& o, std::vector<Tensor*> values,
                std::vector<std::string> names)
      : options_(o), values_(std::move(values)), names_(std::move(names)) {
    for (Tensor* v : values_) exp_avg_.emplace_back(v->shape(), v->device());
  }
  void Step(const std::vector<const Tensor*>& grads,
            const NonFiniteCounts* skip_if_any) override {
    CheckUpdateLists("lion", values_, grads, {Pointers(&exp_avg_)});
    if (values_.empty()) return;
    kernels::lion_update_all.For(values_.front()->device())(
        values_, grads, Pointers(&exp_avg_),
        {options_.lr, options_.beta1, options_.beta2, options_.weight_decay},
        skip_if_any);
  }
  void set_lr(float lr) override { options_.lr = lr; }
  std::vector<std::pair<std::string, Tensor*>> State() override {
    std::vector<std::pair<std::string, Tensor*>> state;
    for (size_t i = 0; i < exp_avg_.size(); ++i) {
      state.emplace_back(names_[i] + ".exp_avg", &exp_avg_[i]);
    }
    return state;
  }

 private:
  LionOptions options_;
  std::vector<Tensor*> values_;
  std::vector<std::string> names_;
  std::vector<Tensor> exp_avg_;
};

OptimizerSpec LionSpec() {
  OptimizerSpec spec;
  spec.name = "lion";
  spec.summary = "lion (Chen et al. 2023: the sign of the momentum)";
  spec.reads = {{"beta1", 0.9f}, {"beta2", 0.99f}};
  spec.default_lr = 1e-4f;
  spec.default_lr_source = "lion-pytorch's default";
  spec.weight_decay = "the decoupled decay";
  spec.make = [](const OptimizerOptions& o, std::vector<Tensor*> values,
                 std::vector<std::string> names) {
    LionOptions lion;
    lion.lr = o.lr;
    lion.beta1 = o.beta1;
    lion.beta2 = o.beta2;
    lion.weight_decay = o.weight_decay;
    return MakeLion(lion, std::move(values), std::move(names));
  };
  return spec;
}

}  // namespace

std::unique_ptr<Optimizer> MakeLion(const LionOptions& options,
                                    std::vector<Tensor*> values,
                                    std::vector<std::string> names) {
  CheckAboveZero("lion", "lr", options.lr);
  CheckInUnit("lion", "beta1", options.beta1);
  CheckInUnit("lion", "beta2", options.beta2);
  CheckInUnit("lion", "weight decay", options.weight_decay);
  CheckOneNameEach("lion", values.size(), names.size());
  return std::make_unique<LionOptimizer>(options, std::move(values),
                                         std::move(names));
}

RINGLET_REGISTER_OPTIMIZER(LionSpec);

}  // namespace ringlet::nn
