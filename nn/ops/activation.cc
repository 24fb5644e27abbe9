#include "nn/ops/activation.h"

#include "nn/ops/cuda/cuda_ops.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/parallel.h"

namespace ringlet::nn {
namespace {

// Elements per thread below which a thread costs more than it saves.
constexpr int64_t kGrain = int64_t{1} << 16;

}  // namespace

Tensor ReluForward(const Tensor& x) {
  if (OpDevice("relu", {&x}).is_cuda()) return cuda_ops::ReluForward(x);
  Tensor y = Tensor::Uninitialized(x.shape());
  const float* in = x.data();
  float* out = y.data();
  ParallelForElements(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
  });
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
  ParallelForElements(y.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = yv[i] > 0.0f ? g[i] : 0.0f;
  });
  return dx;
}

}  // namespace ringlet::nn
