// ReLU: y = max(x, 0); its gradient passes where x > 0. float32 or
// bfloat16, the output in the input's type.
#ifndef RINGLET_NN_OPS_ACTIVATION_H_
#define RINGLET_NN_OPS_ACTIVATION_H_

#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

Tensor ReluForward(const Tensor& x);
// `y` is ReluForward's output (y > 0 exactly where x > 0).
Tensor ReluBackward(const Tensor& y, const Tensor& dy);

// Implementations per device type (kernel_table.h), given checked
// arguments: relu_backward's y and dy of one type.
namespace kernels {
inline KernelTable<Tensor(const Tensor& x)> relu_forward{"relu"};
inline KernelTable<Tensor(const Tensor& y, const Tensor& dy)> relu_backward{
    "relu backward"};
}  // namespace kernels

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_ACTIVATION_H_
