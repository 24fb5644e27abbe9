// The optimizers' updates on CPU devices, where the non-finite counts are
// there already.
#include "nn/ops/optimizer_updates.h"

#include <cmath>
#include <vector>

namespace ringlet::nn {
namespace {

bool Skip(const NonFiniteCounts* skip_if_any) {
  return skip_if_any != nullptr && skip_if_any->FirstBad() >= 0;
}

void Sgd(Tensor& value, const Tensor& grad, Tensor* velocity,
         const SgdStep& step) {
  float* p = value.data();
  const float* g = grad.data();
  const int64_t n = value.numel();
  if (step.momentum == 0.0f) {
    for (int64_t i = 0; i < n; ++i) {
      p[i] -= step.lr * (g[i] + step.weight_decay * p[i]);
    }
    return;
  }
  float* v = velocity->data();
  for (int64_t i = 0; i < n; ++i) {
    v[i] = step.momentum * v[i] + g[i] + step.weight_decay * p[i];
    p[i] -= step.lr * v[i];
  }
}

void SgdUpdateCpu(Tensor& value, const Tensor& grad, Tensor* velocity,
                  const SgdStep& step, const NonFiniteCounts* skip_if_any) {
  if (!Skip(skip_if_any)) Sgd(value, grad, velocity, step);
}

void SgdUpdateAllCpu(const std::vector<Tensor*>& values,
                     const std::vector<const Tensor*>& grads,
                     const std::vector<Tensor*>& velocities,
                     const SgdStep& step, const NonFiniteCounts* skip_if_any) {
  if (Skip(skip_if_any)) return;
  const bool momentum = step.momentum != 0.0f;
  for (size_t i = 0; i < values.size(); ++i) {
    Sgd(*values[i], *grads[i], momentum ? velocities[i] : nullptr, step);
  }
}

void AdamUpdateAllCpu(const std::vector<Tensor*>& values,
                      const std::vector<const Tensor*>& grads,
                      const std::vector<Tensor*>& exp_avgs,
                      const std::vector<Tensor*>& exp_avg_sqs,
                      const AdamStep& f, const NonFiniteCounts* skip_if_any) {
  if (Skip(skip_if_any)) return;
  const float b1 = f.beta1, b2 = f.beta2, eps = f.eps;
  for (size_t t = 0; t < values.size(); ++t) {
    float* p = values[t]->data();
    const float* g = grads[t]->data();
    float* m = exp_avgs[t]->data();
    float* v = exp_avg_sqs[t]->data();
    const int64_t n = values[t]->numel();
    for (int64_t i = 0; i < n; ++i) {
      const float grad = g[i] + f.grad_decay * p[i];
      p[i] *= f.decay;
      m[i] = b1 * m[i] + (1.0f - b1) * grad;
      v[i] = b2 * v[i] + (1.0f - b2) * grad * grad;
      const float denom = std::sqrt(v[i]) / f.bias_correction2_sqrt + eps;
      p[i] -= f.step_size * (m[i] / denom);
    }
  }
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::sgd_update, DeviceType::kCpu, SgdUpdateCpu);
RINGLET_REGISTER_KERNEL(kernels::sgd_update_all, DeviceType::kCpu,
                        SgdUpdateAllCpu);
RINGLET_REGISTER_KERNEL(kernels::adam_update_all, DeviceType::kCpu,
                        AdamUpdateAllCpu);

}  // namespace ringlet::nn
