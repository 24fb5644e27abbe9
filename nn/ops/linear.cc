#include "nn/ops/linear.h"

#include "nn/ops/dispatch.h"
#include "nn/ops/eigen_maps.h"
#include "nn/ops/gpu_ops.h"

namespace ringlet::nn {

Tensor LinearForward(const Tensor& x, const Tensor& w, const Tensor& b) {
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

LinearGrads LinearBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy) {
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

}  // namespace ringlet::nn
