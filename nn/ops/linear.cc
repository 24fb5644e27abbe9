#include "nn/ops/linear.h"

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"

namespace ringlet::nn {

Tensor LinearForward(const Tensor& x, const Tensor& w, const Tensor& b) {
  ExpectShape("linear", "weight", w, {-1, -1});
  ExpectShape("linear", "input", x, {-1, w.dim(0)});
  if (b.defined()) ExpectShape("linear", "bias", b, {w.dim(1)});
  if (!ComputesInBf16({&x, &w, &b})) {
    return kernels::linear_forward.For(OpDevice("linear", {&x, &w, &b}))(
        x, w, b, DType::kFloat32);
  }
  return kernels::linear_forward.For(OpDeviceOfAnyType("linear", {&x, &w, &b}))(
      x, w, b, DType::kBFloat16);
}

LinearGrads LinearBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy) {
  ExpectShape("linear backward", "output gradient", dy, {x.dim(0), w.dim(1)});
  if (!ComputesInBf16({&x, &w, &dy})) {
    return kernels::linear_backward.For(OpDevice(
        "linear backward", {&x, &w, &dy}))(x, w, has_bias, dy, DType::kFloat32);
  }
  LinearGrads g = kernels::linear_backward.For(OpDeviceOfAnyType(
      "linear backward", {&x, &w, &dy}))(x, w, has_bias, dy, DType::kBFloat16);
  // The input gradient rounded once to bfloat16, as the kernels write it,
  // in the input's type; the parameters' gradients are float32 sums, as
  // the master weights.
  g.dx = AsDType(AsDType(g.dx, DType::kBFloat16), x.dtype());
  return g;
}

}  // namespace ringlet::nn
