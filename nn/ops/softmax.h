// Softmax over the last axis: y = e^(x - max) / sum e^(x - max) per row
// (class probabilities from logits, as torch.softmax(x, dim=-1)), and its
// gradient dx = y (dy - sum(dy y)). float32 or bfloat16, each row in
// float32 with its sums in double, rounded once; outputs in the input's
// type, the input gradient in the output gradient's. For training, the
// losses (loss.h) take logits: a softmax before them is applied twice.
#ifndef RINGLET_NN_OPS_SOFTMAX_H_
#define RINGLET_NN_OPS_SOFTMAX_H_

#include "nn/ops/dispatch.h"
#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// Implementations per device type (kernel_table.h): at least one axis; y
// and dy of one shape, one device, dy of either type.
namespace kernels {
inline KernelTable<Tensor(const Tensor& x)> softmax_forward{"softmax"};
inline KernelTable<Tensor(const Tensor& y, const Tensor& dy)> softmax_backward{
    "softmax backward"};
}  // namespace kernels

inline Tensor SoftmaxForward(const Tensor& x) {
  if (x.rank() == 0) {
    throw ShapeError("softmax: input is a scalar; it needs an axis of classes");
  }
  return kernels::softmax_forward.For(OpDeviceOfAnyType("softmax", {&x}))(x);
}

// `y` is SoftmaxForward's output.
inline Tensor SoftmaxBackward(const Tensor& y, const Tensor& dy) {
  ExpectShape("softmax backward", "output gradient", dy, y.shape());
  if (y.rank() == 0) {
    throw ShapeError("softmax backward: output is a scalar");
  }
  return kernels::softmax_backward.For(
      OpDeviceOfAnyType("softmax backward", {&y, &dy}))(y, dy);
}

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_SOFTMAX_H_
