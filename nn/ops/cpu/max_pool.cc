// Max pooling on CPU devices, float32: planes split over the op threads.
// The backward finds each window's maximum again in the input, so it
// needs no indices kept from the forward (a layer keeps x and y, which
// cuDNN's backward takes too).
#include "nn/ops/max_pool.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

// Planes per thread below which a thread costs more than it saves.
constexpr int64_t kPlaneGrain = 16;

// The index in an h x w plane of the maximum of window (i, j): the first
// in row-major order, a NaN over any number.
int64_t WindowMaximum(const float* plane, int64_t h, int64_t w, int64_t i,
                      int64_t j, const MaxPool2dParams& params) {
  const int64_t top = i * params.stride - params.padding;
  const int64_t left = j * params.stride - params.padding;
  const int64_t r_begin = std::max<int64_t>(top, 0);
  const int64_t r_end = std::min<int64_t>(top + params.kernel, h);
  const int64_t c_begin = std::max<int64_t>(left, 0);
  const int64_t c_end = std::min<int64_t>(left + params.kernel, w);
  int64_t best = r_begin * w + c_begin;
  for (int64_t r = r_begin; r < r_end; ++r) {
    for (int64_t c = c_begin; c < c_end; ++c) {
      const float v = plane[r * w + c], b = plane[best];
      if (v > b || (std::isnan(v) && !std::isnan(b))) best = r * w + c;
    }
  }
  return best;
}

// Calls fn(plane) for each of the N x C planes, split over the op threads.
template <typename Fn>
void ForEachPlane(int64_t planes, Fn fn) {
  ParallelForElements(planes, kPlaneGrain, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) fn(n);
  });
}

Tensor MaxPool2dForwardCpu(const Tensor& x, const Shape& y_shape,
                           const MaxPool2dParams& params) {
  Tensor y = Tensor::Uninitialized(y_shape);
  const int64_t h = x.dim(2), w = x.dim(3), p = y_shape[2], q = y_shape[3];
  ForEachPlane(y_shape[0] * y_shape[1], [&](int64_t n) {
    const float* in = x.data() + n * h * w;
    float* out = y.data() + n * p * q;
    for (int64_t i = 0; i < p; ++i) {
      for (int64_t j = 0; j < q; ++j) {
        out[i * q + j] = in[WindowMaximum(in, h, w, i, j, params)];
      }
    }
  });
  return y;
}

Tensor MaxPool2dBackwardCpu(const Tensor& x, const Tensor&, const Tensor& dy,
                            const MaxPool2dParams& params) {
  Tensor dx = Tensor::Uninitialized(x.shape());
  const int64_t h = x.dim(2), w = x.dim(3), p = dy.dim(2), q = dy.dim(3);
  ForEachPlane(dy.dim(0) * dy.dim(1), [&](int64_t n) {
    const float* in = x.data() + n * h * w;
    const float* g = dy.data() + n * p * q;
    float* out = dx.data() + n * h * w;
    std::fill(out, out + h * w, 0.0f);
    for (int64_t i = 0; i < p; ++i) {
      for (int64_t j = 0; j < q; ++j) {
        out[WindowMaximum(in, h, w, i, j, params)] += g[i * q + j];
      }
    }
  });
  return dx;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::max_pool2d_forward, DeviceType::kCpu,
                        MaxPool2dForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::max_pool2d_backward, DeviceType::kCpu,
                        MaxPool2dBackwardCpu);

}  // namespace ringlet::nn
