// Sigmoid, y = 1 / (1 + e^-x), and tanh: the book's saturating activations
// (the original LeNet, RNNs). Both gradients are written from the output
// (y (1 - y) and 1 - y^2), so a layer keeps y alone. float32 or bfloat16,
// computed in float32 and rounded once; outputs in the input's type, the
// input gradient in the output gradient's.
#ifndef RINGLET_NN_OPS_SIGMOID_TANH_H_
#define RINGLET_NN_OPS_SIGMOID_TANH_H_

#include "nn/ops/dispatch.h"
#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// Implementations per device type (kernel_table.h): y and dy of one shape,
// one device; dy of either type.
namespace kernels {
inline KernelTable<Tensor(const Tensor& x)> sigmoid_forward{"sigmoid"};
inline KernelTable<Tensor(const Tensor& y, const Tensor& dy)> sigmoid_backward{
    "sigmoid backward"};
inline KernelTable<Tensor(const Tensor& x)> tanh_forward{"tanh"};
inline KernelTable<Tensor(const Tensor& y, const Tensor& dy)> tanh_backward{
    "tanh backward"};
}  // namespace kernels

inline Tensor SigmoidForward(const Tensor& x) {
  return kernels::sigmoid_forward.For(OpDeviceOfAnyType("sigmoid", {&x}))(x);
}

// `y` is SigmoidForward's output.
inline Tensor SigmoidBackward(const Tensor& y, const Tensor& dy) {
  ExpectShape("sigmoid backward", "output gradient", dy, y.shape());
  return kernels::sigmoid_backward.For(
      OpDeviceOfAnyType("sigmoid backward", {&y, &dy}))(y, dy);
}

inline Tensor TanhForward(const Tensor& x) {
  return kernels::tanh_forward.For(OpDeviceOfAnyType("tanh", {&x}))(x);
}

// `y` is TanhForward's output.
inline Tensor TanhBackward(const Tensor& y, const Tensor& dy) {
  ExpectShape("tanh backward", "output gradient", dy, y.shape());
  return kernels::tanh_backward.For(
      OpDeviceOfAnyType("tanh backward", {&y, &dy}))(y, dy);
}

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_SIGMOID_TANH_H_
