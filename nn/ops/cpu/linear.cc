// The fully connected layer on CPU devices: Eigen's matrix products. In
// bfloat16 the reference (autocast.h): float32 sums of bfloat16 values,
// rounded once.
#include "nn/ops/linear.h"

#include "nn/ops/autocast.h"
#include "nn/ops/eigen_maps.h"

namespace ringlet::nn {
namespace {

Tensor Float32Forward(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t n = x.dim(0), in = w.dim(0), out = w.dim(1);
  Tensor y = Tensor::Uninitialized({n, out});
  MatrixMap ym(y.data(), n, out);
  ym.noalias() =
      ConstMatrixMap(x.data(), n, in) * ConstMatrixMap(w.data(), in, out);
  if (b.defined()) {
    ym.rowwise() += ConstVectorMap(b.data(), out).transpose();
  }
  return y;
}

LinearGrads Float32Backward(const Tensor& x, const Tensor& w, bool has_bias,
                            const Tensor& dy) {
  const int64_t n = x.dim(0), in = w.dim(0), out = w.dim(1);
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

Tensor LinearForwardCpu(const Tensor& x, const Tensor& w, const Tensor& b,
                        DType compute) {
  if (compute == DType::kFloat32) return Float32Forward(x, w, b);
  return AsDType(
      Float32Forward(RoundedToBf16(x), RoundedToBf16(w), RoundedToBf16(b)),
      DType::kBFloat16);
}

LinearGrads LinearBackwardCpu(const Tensor& x, const Tensor& w, bool has_bias,
                              const Tensor& dy, DType compute) {
  if (compute == DType::kFloat32) return Float32Backward(x, w, has_bias, dy);
  return Float32Backward(RoundedToBf16(x), RoundedToBf16(w), has_bias,
                         RoundedToBf16(dy));
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::linear_forward, DeviceType::kCpu,
                        LinearForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::linear_backward, DeviceType::kCpu,
                        LinearBackwardCpu);

}  // namespace ringlet::nn
