// ReLU on CPU devices, float32 and bfloat16. On bfloat16 bits directly:
// its results are its inputs or zero, so no rounding is involved and the
// values are the float32 kernel's.
#include "nn/ops/activation.h"

#include <cstdint>
#include <type_traits>

#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

// Elements per thread below which a thread costs more than it saves.
constexpr int64_t kGrain = int64_t{1} << 16;

// Whether a value is above zero (not -0, not a NaN). For bfloat16 bits:
// 0x0001 to 0x7F80 (+infinity), which the unsigned wrap of bits - 1 maps
// below 0x7F80. Branch-free, so the loops vectorise.
inline bool Positive(float v) { return v > 0.0f; }
inline bool Positive(uint16_t bits) {
  return static_cast<uint16_t>(bits - 1) < 0x7F80;
}

// The tensor's elements as T: float32's, or bfloat16's bits.
template <typename T>
T* Data(Tensor& t) {
  if constexpr (std::is_same_v<T, float>) {
    return t.data();
  } else {
    return t.bf16_data();
  }
}
template <typename T>
const T* Data(const Tensor& t) {
  if constexpr (std::is_same_v<T, float>) {
    return t.data();
  } else {
    return t.bf16_data();
  }
}

template <typename T>
Tensor Forward(const Tensor& x) {
  Tensor y = Tensor::Uninitialized(x.shape(), Device::Cpu(), x.dtype());
  const T* in = Data<T>(x);
  T* out = Data<T>(y);
  ParallelForElements(x.numel(), kGrain, [in, out](int64_t begin, int64_t end) {
    // Local restrict pointers: through the closure's references the
    // compiler reloaded them per element and could not vectorise.
    const T* __restrict src = in + begin;
    T* __restrict dst = out + begin;
    for (int64_t i = 0; i < end - begin; ++i) {
      dst[i] = Positive(src[i]) ? src[i] : T{0};
    }
  });
  return y;
}

Tensor Float32Backward(const Tensor& y, const Tensor& dy) {
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

Tensor Bf16Backward(const Tensor& y, const Tensor& dy) {
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
          // A mask of all ones or zeros, no select: GCC vectorises this form.
          dst[i] = grad[i] &
                   static_cast<uint16_t>(-static_cast<int>(Positive(mask[i])));
        }
      });
  return dx;
}

Tensor ReluForwardCpu(const Tensor& x) {
  return x.dtype() == DType::kBFloat16 ? Forward<uint16_t>(x)
                                       : Forward<float>(x);
}

Tensor ReluBackwardCpu(const Tensor& y, const Tensor& dy) {
  return dy.dtype() == DType::kBFloat16 ? Bf16Backward(y, dy)
                                        : Float32Backward(y, dy);
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::relu_forward, DeviceType::kCpu,
                        ReluForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::relu_backward, DeviceType::kCpu,
                        ReluBackwardCpu);

}  // namespace ringlet::nn
