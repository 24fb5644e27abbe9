// torch.optim.Adam and AdamW, with options of their own:
//   AdamW  p -= lr wd p (decoupled weight decay), then the Adam step;
//   Adam   adds wd p to g instead;
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Registered as "adam" and "adamw" (--optimizer).
#ifndef RINGLET_NN_OPTIM_ADAM_OPTIMIZER_H_
#define RINGLET_NN_OPTIM_ADAM_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/ops/non_finite.h"
#include "nn/optim/optimizer.h"
#include "nn/tensor.h"

namespace ringlet::nn {

struct AdamOptions {  // torch's defaults.
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled = false;  // AdamW's decay.
};

// An Adam (AdamW with `decoupled`) optimizer of `values`, named `names`;
// its state "w.exp_avg", "w.exp_avg_sq" and "adam.step" ("adamw.step").
// Throws std::invalid_argument for a setting out of range (lr > 0; betas
// and weight decay in [0, 1); eps > 0) or lists of different lengths.
std::unique_ptr<Optimizer> MakeAdam(const AdamOptions& options,
                                    std::vector<Tensor*> values,
                                    std::vector<std::string> names);

// One Adam step on each listed tensor, all on one device; `step` is t,
// counted from 1. Throws std::invalid_argument for lists of different
// lengths, ShapeError and DeviceError as the ops do.
void AdamUpdateAll(const std::vector<Tensor*>& values,
                   const std::vector<const Tensor*>& grads,
                   const std::vector<Tensor*>& exp_avgs,
                   const std::vector<Tensor*>& exp_avg_sqs,
                   const AdamOptions& options, int64_t step,
                   const NonFiniteCounts* skip_if_any = nullptr);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPTIM_ADAM_OPTIMIZER_H_
