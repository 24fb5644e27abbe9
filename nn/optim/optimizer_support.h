// What the optimizers' own files share: the checks of their update lists
// and their state as pointers.
#ifndef RINGLET_NN_OPTIM_OPTIMIZER_SUPPORT_H_
#define RINGLET_NN_OPTIM_OPTIMIZER_SUPPORT_H_

#include <vector>

#include "nn/tensor.h"

namespace ringlet::nn {

// Throws std::invalid_argument, naming `op`, unless `grads` and every list
// of `states` hold one tensor per value; ShapeError and DeviceError unless
// each matches its value's shape and all share the first value's device.
void CheckUpdateLists(const char* op, const std::vector<Tensor*>& values,
                      const std::vector<const Tensor*>& grads,
                      const std::vector<std::vector<Tensor*>>& states);

inline std::vector<Tensor*> Pointers(std::vector<Tensor>* tensors) {
  std::vector<Tensor*> out;
  for (Tensor& t : *tensors) out.push_back(&t);
  return out;
}

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPTIM_OPTIMIZER_SUPPORT_H_
