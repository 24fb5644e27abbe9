#include "nn/optim/sgd.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "nn/ops/dispatch.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/gpu_ops.h"

namespace ringlet::nn {

void SgdUpdate(Tensor& value, const Tensor& grad, Tensor* velocity,
               const SgdOptions& options, const NonFiniteCounts* skip_if_any) {
  ExpectShape("sgd", "gradient", grad, value.shape());
  const Device device =
      OpDevice("sgd", {&value, &grad, velocity != nullptr ? velocity : &value});
  if (device.is_cuda()) {
    GpuOpsFor(device).SgdUpdate(
        value, grad, velocity, options.lr, options.momentum,
        options.weight_decay,
        skip_if_any != nullptr ? skip_if_any->device_total() : nullptr);
    return;
  }
  // On a CPU the counts are there already.
  if (skip_if_any != nullptr && skip_if_any->FirstBad() >= 0) return;
  float* p = value.data();
  const float* g = grad.data();
  const int64_t n = value.numel();
  if (options.momentum == 0.0f) {
    for (int64_t i = 0; i < n; ++i) {
      p[i] -= options.lr * (g[i] + options.weight_decay * p[i]);
    }
    return;
  }
  float* v = velocity->data();
  for (int64_t i = 0; i < n; ++i) {
    v[i] = options.momentum * v[i] + g[i] + options.weight_decay * p[i];
    p[i] -= options.lr * v[i];
  }
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
  if (device.is_cuda()) {
    GpuOpsFor(device).SgdUpdateAll(
        values, grads, velocities, options.lr, options.momentum,
        options.weight_decay,
        skip_if_any != nullptr ? skip_if_any->device_total() : nullptr);
    return;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    SgdUpdate(*values[i], *grads[i], momentum ? velocities[i] : nullptr,
              options, skip_if_any);
  }
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
