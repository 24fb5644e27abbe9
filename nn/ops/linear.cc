#include "nn/ops/linear.h"

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/eigen_maps.h"
#include "nn/ops/gpu_ops.h"

namespace ringlet::nn {
namespace {

Tensor LinearForwardFloat32(const Tensor& x, const Tensor& w, const Tensor& b) {
  ExpectShape("linear", "weight", w, {-1, -1});
  const int64_t in = w.dim(0), out = w.dim(1);
  ExpectShape("linear", "input", x, {-1, in});
  if (b.defined()) ExpectShape("linear", "bias", b, {out});
  const Device device = OpDevice("linear", {&x, &w, &b});
  if (device.is_cuda()) {
    return GpuOpsFor(device).LinearForward(x, w, b);
  }
  const int64_t n = x.dim(0);
  Tensor y = Tensor::Uninitialized({n, out});
  MatrixMap ym(y.data(), n, out);
  ym.noalias() =
      ConstMatrixMap(x.data(), n, in) * ConstMatrixMap(w.data(), in, out);
  if (b.defined()) {
    ym.rowwise() += ConstVectorMap(b.data(), out).transpose();
  }
  return y;
}

LinearGrads LinearBackwardFloat32(const Tensor& x, const Tensor& w,
                                  bool has_bias, const Tensor& dy) {
  const int64_t n = x.dim(0), in = w.dim(0), out = w.dim(1);
  ExpectShape("linear backward", "output gradient", dy, {n, out});
  const Device device = OpDevice("linear backward", {&x, &w, &dy});
  if (device.is_cuda()) {
    return GpuOpsFor(device).LinearBackward(x, w, has_bias, dy);
  }
  LinearGrads g;
  g.dx = Tensor::Uninitialized({n, in});
  g.dw = Tensor::Uninitialized({in, out});
  const ConstMatrixMap dym(dy.data(), n, out);
  MatrixMap(g.dx.data(), n, in).noalias() =
      dym * ConstMatrixMap(w.data(), in, out).transpose();
  MatrixMap(g.dw.data(), in, out).noalias() =
      ConstMatrixMap(x.data(), n, in).transpose() * dym;
  if (has_bias) {
    g.db = Tensor::Uninitialized({out});
    VectorMap(g.db.data(), out) = dym.colwise().sum().transpose();
  }
  return g;
}

}  // namespace

Tensor LinearForward(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (!ComputesInBf16({&x, &w, &b})) return LinearForwardFloat32(x, w, b);
  const Device device = OpDeviceOfAnyType("linear", {&x, &w, &b});
  if (device.is_cuda()) {  // cuBLAS with bfloat16 operands.
    ExpectShape("linear", "weight", w, {-1, -1});
    ExpectShape("linear", "input", x, {-1, w.dim(0)});
    if (b.defined()) ExpectShape("linear", "bias", b, {w.dim(1)});
    return GpuOpsFor(device).LinearForward(AsDType(x, DType::kBFloat16),
                                           AsDType(w, DType::kBFloat16),
                                           RoundedToBf16(b));
  }
  // The reference (autocast.h): float32 sums of bfloat16 values, rounded
  // once.
  return AsDType(LinearForwardFloat32(RoundedToBf16(x), RoundedToBf16(w),
                                      RoundedToBf16(b)),
                 DType::kBFloat16);
}

LinearGrads LinearBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy) {
  if (!ComputesInBf16({&x, &w, &dy})) {
    return LinearBackwardFloat32(x, w, has_bias, dy);
  }
  const Device device = OpDeviceOfAnyType("linear backward", {&x, &w, &dy});
  LinearGrads g;
  if (device.is_cuda()) {
    ExpectShape("linear backward", "output gradient", dy, {x.dim(0), w.dim(1)});
    g = GpuOpsFor(device).LinearBackward(AsDType(x, DType::kBFloat16),
                                         AsDType(w, DType::kBFloat16), has_bias,
                                         AsDType(dy, DType::kBFloat16));
  } else {
    g = LinearBackwardFloat32(RoundedToBf16(x), RoundedToBf16(w), has_bias,
                              RoundedToBf16(dy));
  }
  // The input gradient rounded once to bfloat16, as the kernels write it,
  // in the input's type; the parameters' gradients are float32 sums, as
  // the master weights.
  g.dx = AsDType(AsDType(g.dx, DType::kBFloat16), x.dtype());
  return g;
}

}  // namespace ringlet::nn
