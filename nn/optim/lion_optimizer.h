// Lion (Chen et al. 2023; lion-pytorch's arithmetic), with options of its
// own: the sign of an interpolation of the momentum and the gradient, with
// decoupled weight decay; one state tensor a parameter ("w.exp_avg").
// Registered as "lion" (--optimizer). Take a rate 3-10x below AdamW's.
#ifndef RINGLET_NN_OPTIM_LION_OPTIMIZER_H_
#define RINGLET_NN_OPTIM_LION_OPTIMIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "nn/optim/optimizer.h"
#include "nn/tensor.h"

namespace ringlet::nn {

struct LionOptions {  // lion-pytorch's defaults.
  float lr = 1e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.99f;
  float weight_decay = 0.0f;
};

// Throws std::invalid_argument for a setting out of range (lr > 0; betas
// and weight decay in [0, 1)) or lists of different lengths.
std::unique_ptr<Optimizer> MakeLion(const LionOptions& options,
                                    std::vector<Tensor*> values,
                                    std::vector<std::string> names);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPTIM_LION_OPTIMIZER_H_
