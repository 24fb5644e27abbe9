// The optimizers' update arithmetic (nn/optim calls it), one
// implementation per device type (kernel_table.h). Every list is non-empty,
// of one length (velocities only with momentum), checked, on one device;
// nothing is updated when `skip_if_any` (may be null) counts a non-finite
// gradient: a GPU decides on the device, without the host waiting.
#ifndef RINGLET_NN_OPS_OPTIMIZER_UPDATES_H_
#define RINGLET_NN_OPS_OPTIMIZER_UPDATES_H_

#include <vector>

#include "nn/ops/kernel_table.h"
#include "nn/ops/non_finite.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// value -= lr * (grad + weight_decay * value), or with momentum:
// velocity = momentum * velocity + grad + weight_decay * value,
// value -= lr * velocity.
struct SgdStep {
  float lr, momentum, weight_decay;
};

// One Adam or AdamW step, the step's shared factors computed by the caller
// (nn/optim/optimizer.cc): grad += grad_decay * value; value *= decay;
// the moments updated; value -= step_size * m / (sqrt(v) /
// bias_correction2_sqrt + eps).
struct AdamStep {
  float beta1, beta2, eps, step_size, bias_correction2_sqrt, decay, grad_decay;
};

namespace kernels {
inline KernelTable<void(Tensor& value, const Tensor& grad, Tensor* velocity,
                        const SgdStep& step,
                        const NonFiniteCounts* skip_if_any)>
    sgd_update{"sgd"};
inline KernelTable<void(
    const std::vector<Tensor*>& values, const std::vector<const Tensor*>& grads,
    const std::vector<Tensor*>& velocities, const SgdStep& step,
    const NonFiniteCounts* skip_if_any)>
    sgd_update_all{"sgd"};
inline KernelTable<void(
    const std::vector<Tensor*>& values, const std::vector<const Tensor*>& grads,
    const std::vector<Tensor*>& exp_avgs,
    const std::vector<Tensor*>& exp_avg_sqs, const AdamStep& step,
    const NonFiniteCounts* skip_if_any)>
    adam_update_all{"adam"};
}  // namespace kernels

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_OPTIMIZER_UPDATES_H_
