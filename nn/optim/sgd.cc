#include "nn/optim/sgd.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "nn/ops/dispatch.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/optimizer_updates.h"

namespace ringlet::nn {

void SgdUpdate(Tensor& value, const Tensor& grad, Tensor* velocity,
               const SgdOptions& options, const NonFiniteCounts* skip_if_any) {
  ExpectShape("sgd", "gradient", grad, value.shape());
  const Device device =
      OpDevice("sgd", {&value, &grad, velocity != nullptr ? velocity : &value});
  kernels::sgd_update.For(device)(
      value, grad, velocity,
      {options.lr, options.momentum, options.weight_decay}, skip_if_any);
}

void SgdUpdateAll(const std::vector<Tensor*>& values,
                  const std::vector<const Tensor*>& grads,
                  const std::vector<Tensor*>& velocities,
                  const SgdOptions& options,
                  const NonFiniteCounts* skip_if_any) {
  const bool momentum = options.momentum != 0.0f;
  if (grads.size() != values.size() ||
      (momentum && velocities.size() != values.size())) {
    throw std::invalid_argument(
        "sgd: " + std::to_string(values.size()) + " values, " +
        std::to_string(grads.size()) + " gradients and " +
        std::to_string(velocities.size()) +
        " velocities (one each, velocities only with momentum)");
  }
  if (values.empty()) return;
  const Device device = values.front()->device();
  for (size_t i = 0; i < values.size(); ++i) {
    ExpectShape("sgd", "gradient", *grads[i], values[i]->shape());
    CommonDevice("sgd", {device, values[i]->device(), grads[i]->device()});
    if (momentum) {
      ExpectShape("sgd", "velocity", *velocities[i], values[i]->shape());
      CommonDevice("sgd", {device, velocities[i]->device()});
    }
  }
  kernels::sgd_update_all.For(device)(
      values, grads, velocities,
      {options.lr, options.momentum, options.weight_decay}, skip_if_any);
}

Sgd::Sgd(std::vector<Parameter*> params, const SgdOptions& options)
    : params_(std::move(params)), options_(options) {
  if (!(options.lr > 0.0f)) {
    throw std::invalid_argument("sgd: learning rate must be positive, got " +
                                std::to_string(options.lr));
  }
  for (float v : {options.momentum, options.weight_decay}) {
    if (v < 0.0f || v >= 1.0f) {
      throw std::invalid_argument(
          "sgd: momentum and weight decay must be in [0, 1), got " +
          std::to_string(v));
    }
  }
  if (options.momentum > 0.0f) {
    for (Parameter* p : params_) {
      velocity_.emplace_back(p->value.shape(), p->value.device());
    }
  }
}

void Sgd::Step(const NonFiniteCounts* skip_if_any) {
  std::vector<Tensor*> values, velocities;
  std::vector<const Tensor*> grads;
  for (size_t i = 0; i < params_.size(); ++i) {
    values.push_back(&params_[i]->value);
    grads.push_back(&params_[i]->grad);
    if (!velocity_.empty()) velocities.push_back(&velocity_[i]);
  }
  SgdUpdateAll(values, grads, velocities, options_, skip_if_any);
}

void Sgd::ZeroGrad() {
  std::vector<Tensor*> grads;
  for (Parameter* p : params_) grads.push_back(&p->grad);
  ZeroAll(grads);
}

}  // namespace ringlet::nn
