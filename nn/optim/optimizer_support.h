// What the optimizers' own files share: the checks of their settings and
// update lists, and their state as pointers.
#ifndef RINGLET_NN_OPTIM_OPTIMIZER_SUPPORT_H_
#define RINGLET_NN_OPTIM_OPTIMIZER_SUPPORT_H_

#include <string>
#include <vector>

#include "nn/tensor.h"

namespace ringlet::nn {

// Throws std::invalid_argument, naming `op`, unless `grads` and every list
// of `states` hold one tensor per value; ShapeError and DeviceError unless
// each matches its value's shape and all share the first value's device.
void CheckUpdateLists(const char* op, const std::vector<Tensor*>& values,
                      const std::vector<const Tensor*>& grads,
                      const std::vector<std::vector<Tensor*>>& states);

// Throw std::invalid_argument "<op>: <what> must be ..." unless `value` is
// a finite number above 0 (rates, eps) or in [0, 1) (betas, momentum,
// weight decay); and unless there is one name per value.
void CheckAboveZero(const std::string& op, const char* what, float value);
void CheckInUnit(const std::string& op, const char* what, float value);
void CheckOneNameEach(const std::string& op, size_t values, size_t names);

inline std::vector<Tensor*> Pointers(std::vector<Tensor>* tensors) {
  std::vector<Tensor*> out;
  for (Tensor& t : *tensors) out.push_back(&t);
  return out;
}

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPTIM_OPTIMIZER_SUPPORT_H_
