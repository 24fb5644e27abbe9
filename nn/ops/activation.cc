#include "nn/ops/activation.h"

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"

namespace ringlet::nn {

Tensor ReluForward(const Tensor& x) {
  return kernels::relu_forward.For(OpDeviceOfAnyType("relu", {&x}))(x);
}

Tensor ReluBackward(const Tensor& y, const Tensor& dy) {
  ExpectShape("relu backward", "output gradient", dy, y.shape());
  if (dy.dtype() != y.dtype()) {
    return AsDType(
        ReluBackward(AsDType(y, DType::kFloat32), AsDType(dy, DType::kFloat32)),
        dy.dtype());
  }
  return kernels::relu_backward.For(
      OpDeviceOfAnyType("relu backward", {&y, &dy}))(y, dy);
}

}  // namespace ringlet::nn
