// Lion's update (Chen et al., "Symbolic Discovery of Optimization
// Algorithms", 2023), one implementation per device type (kernel_table.h):
//   p *= 1 - lr wd;  p -= lr sign(b1 m + (1 - b1) g);  m = b2 m + (1 - b2) g
// sign(0) = 0, as torch.sign. Lists as optimizer_updates.h's: non-empty,
// one length, checked, one device; nothing changes when `skip_if_any`
// (may be null) counts a non-finite gradient.
#ifndef RINGLET_NN_OPS_LION_UPDATE_H_
#define RINGLET_NN_OPS_LION_UPDATE_H_

#include <vector>

#include "nn/ops/kernel_table.h"
#include "nn/ops/non_finite.h"
#include "nn/tensor.h"

namespace ringlet::nn {

struct LionStep {
  float lr, beta1, beta2, weight_decay;
};

namespace kernels {
inline KernelTable<void(
    const std::vector<Tensor*>& values, const std::vector<const Tensor*>& grads,
    const std::vector<Tensor*>& exp_avgs, const LionStep& step,
    const NonFiniteCounts* skip_if_any)>
    lion_update_all{"lion"};
}  // namespace kernels

// One element's update: the CPU's and the GPU's arithmetic, in this order.
#if defined(__CUDACC__)
__host__ __device__
#endif
    inline void
    LionElement(float& p, float g, float& m, const LionStep& s) {
  const float c = s.beta1 * m + (1.0f - s.beta1) * g;
  const float sign = static_cast<float>((c > 0.0f) - (c < 0.0f));
  p = p * (1.0f - s.lr * s.weight_decay) - s.lr * sign;
  m = s.beta2 * m + (1.0f - s.beta2) * g;
}

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_LION_UPDATE_H_
