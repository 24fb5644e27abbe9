#include "nn/ops/activation.h"

#include "nn/ops/cuda/cuda_ops.h"
#include "nn/ops/dispatch.h"

namespace ringlet::nn {

Tensor ReluForward(const Tensor& x) {
  if (OpDevice("relu", {&x}).is_cuda()) return cuda_ops::ReluForward(x);
  Tensor y = Tensor::Uninitialized(x.shape());
  const float* in = x.data();
  float* out = y.data();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    out[i] = in[i] > 0.0f ? in[i] : 0.0f;
  }
  return y;
}

Tensor ReluBackward(const Tensor& y, const Tensor& dy) {
  ExpectShape("relu backward", "output gradient", dy, y.shape());
  if (OpDevice("relu backward", {&y, &dy}).is_cuda()) {
    return cuda_ops::ReluBackward(y, dy);
  }
  Tensor dx = Tensor::Uninitialized(y.shape());
  const float* yv = y.data();
  const float* g = dy.data();
  float* out = dx.data();
  for (int64_t i = 0, n = y.numel(); i < n; ++i) {
    out[i] = yv[i] > 0.0f ? g[i] : 0.0f;
  }
  return dx;
}

}  // namespace ringlet::nn
