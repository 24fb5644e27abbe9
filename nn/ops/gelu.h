// GELU, PyTorch's default (exact) form: y = x Phi(x) = x/2 (1 + erf(x/sqrt2)),
// and its gradient Phi(x) + x phi(x). float32 or bfloat16, each value
// computed in float32 and rounded once; outputs in the input's type, the
// input gradient in the output gradient's.
#ifndef RINGLET_NN_OPS_GELU_H_
#define RINGLET_NN_OPS_GELU_H_

#include "nn/ops/dispatch.h"
#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// Implementations per device type (kernel_table.h): x and dy of one shape,
// one device; dy of either type.
namespace kernels {
inline KernelTable<Tensor(const Tensor& x)> gelu_forward{"gelu"};
inline KernelTable<Tensor(const Tensor& x, const Tensor& dy)> gelu_backward{
    "gelu backward"};
}  // namespace kernels

inline Tensor GeluForward(const Tensor& x) {
  return kernels::gelu_forward.For(OpDeviceOfAnyType("gelu", {&x}))(x);
}

// `x` is the forward's input.
inline Tensor GeluBackward(const Tensor& x, const Tensor& dy) {
  ExpectShape("gelu backward", "output gradient", dy, x.shape());
  return kernels::gelu_backward.For(
      OpDeviceOfAnyType("gelu backward", {&x, &dy}))(x, dy);
}

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_GELU_H_
