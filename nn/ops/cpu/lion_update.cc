// Lion's update on CPU devices, where the non-finite counts are there
// already.
#include "nn/ops/lion_update.h"

#include <vector>

namespace ringlet::nn {
namespace {

void LionUpdateAllCpu(const std::vector<Tensor*>& values,
                      const std::vector<const Tensor*>& grads,
                      const std::vector<Tensor*>& exp_avgs,
                      const LionStep& step,
                      const NonFiniteCounts* skip_if_any) {
  if (skip_if_any != nullptr && skip_if_any->FirstBad() >= 0) return;
  for (size_t t = 0; t < values.size(); ++t) {
    float* p = values[t]->data();
    const float* g = grads[t]->data();
    float* m = exp_avgs[t]->data();
    const int64_t n = values[t]->numel();
    for (int64_t i = 0; i < n; ++i) LionElement(p[i], g[i], m[i], step);
  }
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::lion_update_all, DeviceType::kCpu,
                        LionUpdateAllCpu);

}  // namespace ringlet::nn
