#include "nn/optim/sgd.h"

#include <stdexcept>
#include <string>

#include "nn/ops/cuda/cuda_ops.h"
#include "nn/ops/dispatch.h"

namespace ringlet::nn {

void SgdUpdate(Tensor& value, const Tensor& grad, Tensor* velocity,
               const SgdOptions& options, const NonFiniteCounts* skip_if_any) {
  ExpectShape("sgd", "gradient", grad, value.shape());
  const Device device =
      OpDevice("sgd", {&value, &grad, velocity != nullptr ? velocity : &value});
  if (device.is_cuda()) {
    cuda_ops::SgdUpdate(
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
  for (size_t i = 0; i < params_.size(); ++i) {
    SgdUpdate(params_[i]->value, params_[i]->grad,
              velocity_.empty() ? nullptr : &velocity_[i], options_,
              skip_if_any);
  }
}

void Sgd::ZeroGrad() {
  for (Parameter* p : params_) p->grad.Fill(0.0f);
}

}  // namespace ringlet::nn
