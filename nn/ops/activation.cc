#include "nn/ops/activation.h"

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/gpu_ops.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

// Elements per thread below which a thread costs more than it saves.
constexpr int64_t kGrain = int64_t{1} << 16;

// Whether bfloat16 bits hold a value above zero (not -0, not a NaN):
// 0x0001 to 0x7F80 (+infinity), which the unsigned wrap of bits - 1 maps
// below 0x7F80. Branch-free, so the loops vectorise.
inline bool Bf16Positive(uint16_t bits) {
  return static_cast<uint16_t>(bits - 1) < 0x7F80;
}

}  // namespace

// On CPU devices ReLU works on bfloat16 bits directly: its results are
// its inputs or zero, so no rounding is involved and the values are the
// float32 kernel's.
Tensor ReluForward(const Tensor& x) {
  if (x.dtype() == DType::kBFloat16) {
    if (x.device().is_cuda()) return GpuOpsFor(x.device()).ReluForward(x);
    Tensor y = Tensor::Uninitialized(x.shape(), Device::Cpu(), x.dtype());
    const uint16_t* in = x.bf16_data();
    uint16_t* out = y.bf16_data();
    ParallelForElements(x.numel(), kGrain,
                        [in, out](int64_t begin, int64_t end) {
                          const uint16_t* __restrict src = in + begin;
                          uint16_t* __restrict dst = out + begin;
                          for (int64_t i = 0; i < end - begin; ++i) {
                            dst[i] = Bf16Positive(src[i]) ? src[i] : 0;
                          }
                        });
    return y;
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
  if (dy.dtype() == DType::kBFloat16 && y.dtype() == DType::kBFloat16 &&
      OpDeviceOfAnyType("relu backward", {&y, &dy}).is_cuda()) {
    return GpuOpsFor(y.device()).ReluBackward(y, dy);
  }
  if (dy.dtype() == DType::kBFloat16 && y.dtype() == DType::kBFloat16) {
    Tensor dx = Tensor::Uninitialized(y.shape(), Device::Cpu(), dy.dtype());
    const uint16_t* yv = y.bf16_data();
    const uint16_t* g = dy.bf16_data();
    uint16_t* out = dx.bf16_data();
    ParallelForElements(
        y.numel(), kGrain, [yv, g, out](int64_t begin, int64_t end) {
          const uint16_t* __restrict mask = yv + begin;
          const uint16_t* __restrict grad = g + begin;
          uint16_t* __restrict dst = out + begin;
          for (int64_t i = 0; i < end - begin; ++i) {
            // A mask of all ones or zeros, no select:
            // GCC vectorises this form.
            dst[i] = grad[i] & static_cast<uint16_t>(
                                   -static_cast<int>(Bf16Positive(mask[i])));
          }
        });
    return dx;
  }
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
                          // Read whatever the mask: `mask > 0 ? grad : 0`
                          // loaded grad through vmaskmovps, microcoded on
                          // AMD's cores.
                          const float value = grad[i];
                          dst[i] = mask[i] > 0.0f ? value : 0.0f;
                        }
                      });
  return dx;
}

}  // namespace ringlet::nn
