#include "nn/ops/conv2d.h"

#include <string>

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/im2col.h"

namespace ringlet::nn {
namespace {

ConvGeometry Check(const Tensor& x, const Tensor& w,
                   const Conv2dParams& params) {
  ExpectShape("conv2d", "input", x, {-1, -1, -1, -1});
  ExpectShape("conv2d", "weight", w, {-1, x.dim(1), -1, -1});
  const std::string shapes =
      "input " + ToString(x.shape()) + ", weight " + ToString(w.shape());
  if (params.stride < 1 || params.padding < 0) {
    throw ShapeError("conv2d: stride " + std::to_string(params.stride) +
                     " and padding " + std::to_string(params.padding) +
                     " must be >= 1 and >= 0 (" + shapes + ")");
  }
  ConvGeometry g{x.dim(0), x.dim(1),      x.dim(2),      x.dim(3),
                 w.dim(0), w.dim(2),      w.dim(3),      0,
                 0,        params.stride, params.padding};
  if (g.h + 2 * g.pad < g.r || g.w + 2 * g.pad < g.s || g.r < 1 || g.s < 1) {
    throw ShapeError("conv2d: a " + std::to_string(g.r) + "x" +
                     std::to_string(g.s) + " kernel does not fit the " +
                     std::to_string(g.h) + "x" + std::to_string(g.w) +
                     " input with padding " + std::to_string(g.pad) + " (" +
                     shapes + ")");
  }
  g.p = (g.h + 2 * g.pad - g.r) / g.stride + 1;
  g.q = (g.w + 2 * g.pad - g.s) / g.stride + 1;
  return g;
}

Tensor ConvForward(const Tensor& x, const Tensor& w, const Tensor& b,
                   const Conv2dParams& params, bool relu) {
  const ConvGeometry g = Check(x, w, params);
  if (b.defined()) ExpectShape("conv2d", "bias", b, {g.k});
  if (!ComputesInBf16({&x, &w, &b})) {
    return kernels::conv2d_forward.For(OpDevice("conv2d", {&x, &w, &b}))(
        x, w, b, params, DType::kFloat32, relu);
  }
  return kernels::conv2d_forward.For(OpDeviceOfAnyType("conv2d", {&x, &w, &b}))(
      x, w, b, params, DType::kBFloat16, relu);
}

}  // namespace

Tensor Conv2dForward(const Tensor& x, const Tensor& w, const Tensor& b,
                     const Conv2dParams& params) {
  return ConvForward(x, w, b, params, /*relu=*/false);
}

Tensor Conv2dReluForward(const Tensor& x, const Tensor& w, const Tensor& b,
                         const Conv2dParams& params) {
  return ConvForward(x, w, b, params, /*relu=*/true);
}

Tensor Conv2dComputeWeight(const Tensor& x, const Tensor& w) {
  const DType compute =
      ComputesInBf16({&x, &w}) ? DType::kBFloat16 : DType::kFloat32;
  return kernels::conv2d_compute_weight.For(
      OpDeviceOfAnyType("conv2d", {&x, &w}))(x, w, compute);
}

Conv2dGrads Conv2dBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy, const Conv2dParams& params,
                           bool need_dx) {
  const ConvGeometry g = Check(x, w, params);
  ExpectShape("conv2d backward", "output gradient", dy, {g.n, g.k, g.p, g.q});
  if (!ComputesInBf16({&x, &w, &dy})) {
    return kernels::conv2d_backward.For(
        OpDevice("conv2d backward", {&x, &w, &dy}))(x, w, has_bias, dy, params,
                                                    need_dx, DType::kFloat32);
  }
  Conv2dGrads grads = kernels::conv2d_backward.For(
      OpDeviceOfAnyType("conv2d backward", {&x, &w, &dy}))(
      x, w, has_bias, dy, params, need_dx, DType::kBFloat16);
  // The input gradient rounded once to bfloat16, as the kernels write it,
  // in the input's type; the parameters' gradients are float32 sums, as
  // the master weights.
  grads.dx = AsDType(AsDType(grads.dx, DType::kBFloat16), x.dtype());
  return grads;
}

}  // namespace ringlet::nn
