// torch.optim.SGD behind the Optimizer interface, with its own options
// (SgdOptions, sgd.h): the chapters' optimizer, registered as "sgd".
#ifndef RINGLET_NN_OPTIM_SGD_OPTIMIZER_H_
#define RINGLET_NN_OPTIM_SGD_OPTIMIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "nn/optim/optimizer.h"
#include "nn/optim/sgd.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// Its state: "w.momentum" with momentum, none without. Throws
// std::invalid_argument for a setting out of range (lr > 0; momentum and
// weight decay in [0, 1)) or lists of different lengths.
std::unique_ptr<Optimizer> MakeSgd(const SgdOptions& options,
                                   std::vector<Tensor*> values,
                                   std::vector<std::string> names);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPTIM_SGD_OPTIMIZER_H_
