// Elementwise CPU kernels written once over float32: the input widened,
// f applied per element on the op threads, the result rounded once to the
// output's type (GELU, sigmoid, tanh).
#ifndef RINGLET_NN_OPS_CPU_FLOAT_MAP_H_
#define RINGLET_NN_OPS_CPU_FLOAT_MAP_H_

#include <cstdint>

#include "nn/ops/autocast.h"
#include "nn/ops/op_threads.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// Elements per thread below which a thread costs more than it saves.
inline constexpr int64_t kFloatMapGrain = int64_t{1} << 14;

// y = f(x) elementwise, in x's type.
template <typename Fn>
Tensor MapFloat32(const Tensor& x_any, Fn f) {
  const Tensor x = AsDType(x_any, DType::kFloat32);
  Tensor y = Tensor::Uninitialized(x.shape());
  const float* in = x.data();
  float* out = y.data();
  ParallelForElements(x.numel(), kFloatMapGrain,
                      [&](int64_t begin, int64_t end) {
                        for (int64_t i = begin; i < end; ++i) out[i] = f(in[i]);
                      });
  return AsDType(y, x_any.dtype());
}

// dx = dy * slope(v) elementwise (v the forward's input or output, as the
// op's gradient is written), in dy's type.
template <typename Fn>
Tensor MapFloat32Gradient(const Tensor& v_any, const Tensor& dy_any, Fn slope) {
  const Tensor v = AsDType(v_any, DType::kFloat32);
  const Tensor dy = AsDType(dy_any, DType::kFloat32);
  Tensor dx = Tensor::Uninitialized(v.shape());
  const float* values = v.data();
  const float* g = dy.data();
  float* out = dx.data();
  ParallelForElements(v.numel(), kFloatMapGrain,
                      [&](int64_t begin, int64_t end) {
                        for (int64_t i = begin; i < end; ++i) {
                          out[i] = g[i] * slope(values[i]);
                        }
                      });
  return AsDType(dx, dy_any.dtype());
}

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_CPU_FLOAT_MAP_H_
