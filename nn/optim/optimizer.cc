#include "nn/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

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

namespace {

std::string Number(float value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

void CheckAboveZero(const std::string& op, const char* what, float value) {
  if (!(value > 0) || !std::isfinite(value)) {
    throw std::invalid_argument(op + ": " + what +
                                " must be a finite number above 0, not " +
                                Number(value));
  }
}

void CheckInUnit(const std::string& op, const char* what, float value) {
  if (!(value >= 0 && value < 1)) {
    throw std::invalid_argument(op + ": " + what + " must be in [0, 1), not " +
                                Number(value));
  }
}

void CheckOneNameEach(const std::string& op, size_t values, size_t names) {
  if (names != values) {
    throw std::invalid_argument(op + ": one name per value (" +
                                std::to_string(values) + " values, " +
                                std::to_string(names) + " names)");
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

// No setting the optimizer does not read (its own Make checks the ranges
// of those it does).
void CheckReads(const OptimizerSpec& spec, const OptimizerOptions& o) {
  if (o.momentum != 0 && !Reads(spec, "momentum")) {
    std::string reads;
    for (const auto& [name, value] : spec.reads) {
      reads += (reads.empty() ? "" : ", ") + name;
    }
    throw std::invalid_argument(
        o.name + ": momentum is not one of its settings (it reads " +
        (reads.empty() ? std::string("lr and weight decay only") : reads) +
        ")");
  }
  if (spec.check) spec.check(o);
}

}  // namespace

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options,
                                         std::vector<Tensor*> values,
                                         std::vector<std::string> names) {
  const OptimizerSpec& spec = FindOptimizer(options.name);
  CheckReads(spec, options);
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
