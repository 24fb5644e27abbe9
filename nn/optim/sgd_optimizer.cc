// torch.optim.SGD behind the Optimizer interface (sgd.h has the
// arithmetic).
#include "nn/optim/sgd_optimizer.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/optim/optimizer_support.h"
#include "nn/optim/registry.h"
#include "nn/optim/sgd.h"

namespace ringlet::nn {
namespace {

class SgdOptimizer : public Optimizer {
 public:
  SgdOptimizer(const SgdOptions& o, std::vector<Tensor*> values,
               std::vector<std::string> names)
      : values_(std::move(values)), names_(std::move(names)), sgd_(o) {
    if (o.momentum > 0) {  // Zeros, as torch's first step.
      for (Tensor* v : values_) velocity_.emplace_back(v->shape(), v->device());
    }
  }
  void Step(const std::vector<const Tensor*>& grads,
            const NonFiniteCounts* skip_if_any) override {
    SgdUpdateAll(values_, grads, Pointers(&velocity_), sgd_, skip_if_any);
  }
  void StepOnSum(const std::vector<Tensor*>& grads, double divisor,
                 const NonFiniteCounts* skip_if_any) override {
    if (sgd_.momentum != 0 || sgd_.weight_decay != 0) {
      // The decay and the velocity act on the mean, not on the sum.
      Optimizer::StepOnSum(grads, divisor, skip_if_any);
      return;
    }
    SgdOptions folded = sgd_;
    folded.lr = static_cast<float>(sgd_.lr / divisor);
    SgdUpdateAll(values_,
                 std::vector<const Tensor*>(grads.begin(), grads.end()), {},
                 folded, skip_if_any);
  }
  void set_lr(float lr) override { sgd_.lr = lr; }
  std::vector<std::pair<std::string, Tensor*>> State() override {
    std::vector<std::pair<std::string, Tensor*>> state;
    for (size_t i = 0; i < velocity_.size(); ++i) {
      state.emplace_back(names_[i] + ".momentum", &velocity_[i]);
    }
    return state;
  }

 private:
  std::vector<Tensor*> values_;
  std::vector<std::string> names_;
  SgdOptions sgd_;
  std::vector<Tensor> velocity_;
};

OptimizerSpec SgdSpec() {
  OptimizerSpec spec;
  spec.name = "sgd";
  spec.summary = "sgd (torch.optim.SGD; the chapters')";
  spec.reads = {{"momentum", 0.0f}};
  spec.weight_decay = "an L2 penalty added to each gradient";
  spec.make = [](const OptimizerOptions& o, std::vector<Tensor*> values,
                 std::vector<std::string> names) {
    return MakeSgd(SgdOptions{o.lr, o.momentum, o.weight_decay},
                   std::move(values), std::move(names));
  };
  return spec;
}

}  // namespace

std::unique_ptr<Optimizer> MakeSgd(const SgdOptions& options,
                                   std::vector<Tensor*> values,
                                   std::vector<std::string> names) {
  CheckAboveZero("sgd", "lr", options.lr);
  CheckInUnit("sgd", "momentum", options.momentum);
  CheckInUnit("sgd", "weight decay", options.weight_decay);
  CheckOneNameEach("sgd", values.size(), names.size());
  return std::make_unique<SgdOptimizer>(options, std::move(values),
                                        std::move(names));
}

RINGLET_REGISTER_OPTIMIZER(SgdSpec);

}  // namespace ringlet::nn
