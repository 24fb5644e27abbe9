#include "nn/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "nn/ops/dispatch.h"
#include "nn/ops/elementwise.h"
#include "nn/optim/optimizer_support.h"
#include "nn/optim/registry.h"

namespace ringlet::nn {

void CheckUpdateLists(const char* op, const std::vector<Tensor*>& values,
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

void Optimizer::StepOnSum(const std::vector<Tensor*>& grads, double divisor,
                          const NonFiniteCounts* skip_if_any) {
  for (Tensor* grad : grads) {
    DivideInPlace(*grad, static_cast<float>(divisor));
  }
  Step(std::vector<const Tensor*>(grads.begin(), grads.end()), skip_if_any);
}

namespace {

// The shared ranges, and no setting the optimizer does not read.
void CheckOptions(const OptimizerSpec& spec, const OptimizerOptions& o) {
  auto bad = [&](const std::string& what) {
    throw std::invalid_argument(o.name + ": " + what);
  };
  if (!(o.lr > 0) || !std::isfinite(o.lr)) {
    bad("lr must be a finite number above 0, not " + std::to_string(o.lr));
  }
  if (!(o.weight_decay >= 0 && o.weight_decay < 1)) {
    bad("weight decay must be in [0, 1)");
  }
  if (!(o.momentum >= 0 && o.momentum < 1)) bad("momentum must be in [0, 1)");
  if (o.momentum != 0 && !Reads(spec, "momentum")) {
    std::string reads;
    for (const auto& [name, value] : spec.reads) {
      reads += (reads.empty() ? "" : ", ") + name;
    }
    bad("momentum is not one of its settings (it reads " +
        (reads.empty() ? std::string("lr and weight decay only") : reads) +
        ")");
  }
  if (!(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1)) {
    bad("beta1 and beta2 must be in [0, 1)");
  }
  if (!(o.eps > 0) || !std::isfinite(o.eps)) bad("eps must be above 0");
  if (spec.check) spec.check(o);
}

}  // namespace

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options,
                                         std::vector<Tensor*> values,
                                         std::vector<std::string> names) {
  const OptimizerSpec& spec = FindOptimizer(options.name);
  CheckOptions(spec, options);
  if (names.size() != values.size()) {
    throw std::invalid_argument("optimizer: one name per value");
  }
  return spec.make(options, std::move(values), std::move(names));
}

std::vector<std::string> OptimizerNames() {
  std::vector<std::string> names;
  for (const OptimizerSpec* spec : RegisteredOptimizers()) {
    names.push_back(spec->name);
  }
  return names;
}

}  // namespace ringlet::nn
