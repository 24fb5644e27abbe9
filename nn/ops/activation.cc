#include "nn/ops/activation.h"

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/gpu_ops.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

// Elements per thread below which a thread costs more than it saves.
constexpr int64_t kGrain = int64_t{1} << 16;

}  // namespace

Tensor ReluForward(const Tensor& x) {
  if (x.dtype() == DType::kBFloat16) {
    // Exact in either type: the float32 kernel's result rounds to itself.
    return AsDType(ReluForward(AsDType(x, DType::kFloat32)), DType::kBFloat16);
  }
  const Device device = OpDevice("relu", {&x});
  if (device.is_cuda()) return GpuOpsFor(device).ReluForward(x);
  Tensor y = Tensor::Uninitialized(x.shape());
  const float* in = x.data();
  float* out = y.data();
  ParallelForElements(x.numel(), kGrain, [in, out](int64_t begin, int64_t end) {
    // Local restrict pointers: through the closure's references the
    // compiler reloaded them per element and could not vectorise.
    const float* __restrict src = in + begin;
    float* __restrict dst = out + begin;
    for (int64_t i = 0; i < end - begin; ++i) {
      dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
    }
  });
  return y;
}

Tensor ReluBackward(const Tensor& y, const Tensor& dy) {
  ExpectShape("relu backward", "output gradient", dy, y.shape());
  if (dy.dtype() == DType::kBFloat16 || y.dtype() == DType::kBFloat16) {
    return AsDType(
        ReluBackward(AsDType(y, DType::kFloat32), AsDType(dy, DType::kFloat32)),
        dy.dtype());
  }
  const Device device = OpDevice("relu backward", {&y, &dy});
  if (device.is_cuda()) {
    return GpuOpsFor(device).ReluBackward(y, dy);
  }
  Tensor dx = Tensor::Uninitialized(y.shape());
  const float* yv = y.data();
  const float* g = dy.data();
  float* out = dx.data();
  ParallelForElements(y.numel(), kGrain,
                      [yv, g, out](int64_t begin, int64_t end) {
                        const float* __restrict mask = yv + begin;
                        const float* __restrict grad = g + begin;
                        float* __restrict dst = out + begin;
                        for (int64_t i = 0; i < end - begin; ++i) {
                          dst[i] = mask[i] > 0.0f ? grad[i] : 0.0f;
                        }
                      });
  return dx;
}

}  // namespace ringlet::nn
