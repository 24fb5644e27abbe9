// Softmax over the last axis on CPU devices: rows split over the op
// threads, each in float32 with its sums in double (the CUDA kernel's
// arithmetic), rounded once to the output's type.
#include "nn/ops/softmax.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "nn/ops/autocast.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

// Values per thread below which a thread costs more than it saves.
constexpr int64_t kGrain = int64_t{1} << 14;

// Calls row(begin, end) over the rows of a tensor whose last axis is `k`,
// in runs of at least kGrain values.
template <typename RowFn>
void ForEachRow(int64_t rows, int64_t k, RowFn row) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(k, 1));
  ParallelForElements(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) row(i);
  });
}

Tensor SoftmaxForwardCpu(const Tensor& x_any) {
  const Tensor x = AsDType(x_any, DType::kFloat32);
  Tensor y = Tensor::Uninitialized(x.shape());
  const int64_t k = x.shape().back();
  if (x.numel() == 0) return AsDType(y, x_any.dtype());
  const float* in = x.data();
  float* out = y.data();
  ForEachRow(x.numel() / k, k, [&](int64_t i) {
    const float* row = in + i * k;
    float* dst = out + i * k;
    const float max = *std::max_element(row, row + k);
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      dst[j] = std::exp(row[j] - max);
      sum += dst[j];
    }
    const float scale = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < k; ++j) dst[j] *= scale;
  });
  return AsDType(y, x_any.dtype());
}

Tensor SoftmaxBackwardCpu(const Tensor& y_any, const Tensor& dy_any) {
  const Tensor y = AsDType(y_any, DType::kFloat32);
  const Tensor dy = AsDType(dy_any, DType::kFloat32);
  Tensor dx = Tensor::Uninitialized(y.shape());
  const int64_t k = y.shape().back();
  if (y.numel() == 0) return AsDType(dx, dy_any.dtype());
  const float* yv = y.data();
  const float* gv = dy.data();
  float* out = dx.data();
  ForEachRow(y.numel() / k, k, [&](int64_t i) {
    const float* yr = yv + i * k;
    const float* gr = gv + i * k;
    double dot = 0;
    for (int64_t j = 0; j < k; ++j) dot += double{yr[j]} * gr[j];
    const float d = static_cast<float>(dot);
    for (int64_t j = 0; j < k; ++j) out[i * k + j] = yr[j] * (gr[j] - d);
  });
  return AsDType(dx, dy_any.dtype());
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::softmax_forward, DeviceType::kCpu,
                        SoftmaxForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::softmax_backward, DeviceType::kCpu,
                        SoftmaxBackwardCpu);

}  // namespace ringlet::nn
