#include "nn/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "nn/ops/dispatch.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/optimizer_updates.h"

namespace ringlet::nn {
namespace {

void CheckLists(const char* op, const std::vector<Tensor*>& values,
                const std::vector<const Tensor*>& grads,
                const std::vector<std::vector<Tensor*>>& states) {
  bool same = grads.size() == values.size();
  for (const auto& s : states) same = same && s.size() == values.size();
  if (!same) {
    throw std::invalid_argument(std::string(op) +
                                ": lists of different lengths (one value, "
                                "gradient and state tensor each)");
  }
  if (values.empty()) return;
  const Device device = values.front()->device();
  for (size_t i = 0; i < values.size(); ++i) {
    ExpectShape(op, "gradient", *grads[i], values[i]->shape());
    CommonDevice(op, {device, values[i]->device(), grads[i]->device()});
    for (const auto& s : states) {
      ExpectShape(op, "state", *s[i], values[i]->shape());
      CommonDevice(op, {device, s[i]->device()});
    }
  }
}

// The factors of step t that every element shares, in double as PyTorch
// computes them on the host.
struct AdamFactors {
  float step_size;              // lr / (1 - b1^t)
  float bias_correction2_sqrt;  // sqrt(1 - b2^t)
  float decay;                  // AdamW: 1 - lr wd (decoupled); Adam: 1.
  float grad_decay;             // Adam: wd (added to g); AdamW: 0.
};

AdamFactors FactorsOf(const OptimizerOptions& o, int64_t step) {
  const double t = static_cast<double>(step);
  const bool decoupled = o.name == "adamw";
  return {static_cast<float>(o.lr / (1.0 - std::pow(o.beta1, t))),
          static_cast<float>(std::sqrt(1.0 - std::pow(o.beta2, t))),
          decoupled ? 1.0f - o.lr * o.weight_decay : 1.0f,
          decoupled ? 0.0f : o.weight_decay};
}

std::vector<Tensor*> Pointers(std::vector<Tensor>* tensors) {
  std::vector<Tensor*> out;
  for (Tensor& t : *tensors) out.push_back(&t);
  return out;
}

}  // namespace

void Optimizer::StepOnSum(const std::vector<Tensor*>& grads, double divisor,
                          const NonFiniteCounts* skip_if_any) {
  for (Tensor* grad : grads) {
    DivideInPlace(*grad, static_cast<float>(divisor));
  }
  Step(std::vector<const Tensor*>(grads.begin(), grads.end()), skip_if_any);
}

namespace {

class SgdOptimizer : public Optimizer {
 public:
  SgdOptimizer(const OptimizerOptions& o, std::vector<Tensor*> values,
               std::vector<std::string> names)
      : values_(std::move(values)), names_(std::move(names)) {
    sgd_.lr = o.lr;
    sgd_.momentum = o.momentum;
    sgd_.weight_decay = o.weight_decay;
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

class AdamOptimizer : public Optimizer {
 public:
  AdamOptimizer(const OptimizerOptions& o, std::vector<Tensor*> values,
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
    state.emplace_back(options_.name + ".step", &step_);
    return state;
  }

 private:
  OptimizerOptions options_;
  std::vector<Tensor*> values_;
  std::vector<std::string> names_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  Tensor step_;
};

void CheckOptions(const OptimizerOptions& o) {
  auto bad = [&](const std::string& what) {
    throw std::invalid_argument(o.name + ": " + what);
  };
  const auto& names = OptimizerNames();
  if (std::find(names.begin(), names.end(), o.name) == names.end()) {
    throw std::invalid_argument("unknown optimizer '" + o.name +
                                "'; use sgd, adam or adamw");
  }
  if (!(o.lr > 0) || !std::isfinite(o.lr)) {
    bad("lr must be a finite number above 0, not " + std::to_string(o.lr));
  }
  if (!(o.weight_decay >= 0 && o.weight_decay < 1)) {
    bad("weight decay must be in [0, 1)");
  }
  if (!(o.momentum >= 0 && o.momentum < 1)) bad("momentum must be in [0, 1)");
  if (o.name != "sgd" && o.momentum != 0) {
    bad("momentum is SGD's; Adam's are beta1 and beta2");
  }
  if (!(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1)) {
    bad("beta1 and beta2 must be in [0, 1)");
  }
  if (!(o.eps > 0) || !std::isfinite(o.eps)) bad("eps must be above 0");
}

}  // namespace

void AdamUpdateAll(const std::vector<Tensor*>& values,
                   const std::vector<const Tensor*>& grads,
                   const std::vector<Tensor*>& exp_avgs,
                   const std::vector<Tensor*>& exp_avg_sqs,
                   const OptimizerOptions& options, int64_t step,
                   const NonFiniteCounts* skip_if_any) {
  CheckLists("adam", values, grads, {exp_avgs, exp_avg_sqs});
  if (values.empty()) return;
  if (step < 1) throw std::invalid_argument("adam: steps count from 1");
  const AdamFactors f = FactorsOf(options, step);
  kernels::adam_update_all.For(values.front()->device())(
      values, grads, exp_avgs, exp_avg_sqs,
      {options.beta1, options.beta2, options.eps, f.step_size,
       f.bias_correction2_sqrt, f.decay, f.grad_decay},
      skip_if_any);
}

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options,
                                         std::vector<Tensor*> values,
                                         std::vector<std::string> names) {
  CheckOptions(options);
  if (names.size() != values.size()) {
    throw std::invalid_argument("optimizer: one name per value");
  }
  if (options.name == "sgd") {
    return std::make_unique<SgdOptimizer>(options, std::move(values),
                                          std::move(names));
  }
  return std::make_unique<AdamOptimizer>(options, std::move(values),
                                         std::move(names));
}

}  // namespace ringlet::nn
