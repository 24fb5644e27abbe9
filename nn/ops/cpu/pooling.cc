// Average pooling on CPU devices: float32, and bfloat16 in and out (the
// values of the float32 kernels on the widened input, rounded once).
#include "nn/ops/pooling.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "nn/ops/autocast.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

// Planes per thread below which a thread costs more than it saves.
constexpr int64_t kPlaneGrain = 64;

// One plane's average pooling, in [h, w] -> out [p, q].
void PoolPlane(const float* in, int64_t w, int kernel, int stride, int64_t p,
               int64_t q, float* __restrict out) {
  const float scale = 1.0f / (kernel * kernel);
  if (kernel == 2 && stride == 2) {  // LeNet's: the same sums, unrolled
    for (int64_t i = 0; i < p; ++i) {
      const float* __restrict top = in + 2 * i * w;
      const float* __restrict bottom = top + w;
      for (int64_t j = 0; j < q; ++j) {
        out[i * q + j] = (((top[2 * j] + top[2 * j + 1]) + bottom[2 * j]) +
                          bottom[2 * j + 1]) *
                         scale;
      }
    }
    return;
  }
  for (int64_t i = 0; i < p; ++i) {
    for (int64_t j = 0; j < q; ++j) {
      float sum = 0.0f;
      for (int r = 0; r < kernel; ++r) {
        const float* row = in + (i * stride + r) * w + j * stride;
        for (int s = 0; s < kernel; ++s) sum += row[s];
      }
      out[i * q + j] = sum * scale;
    }
  }
}

// One plane's gradient, g [p, q] -> out [h, w]. Windows that do not
// overlap (stride >= kernel: LeNet's 2x2 stride 2) each write their own
// values, so no zeroed tensor to add into (zeroing and adding cost a
// LeNet step more than the pooling itself); only a plane the windows do
// not cover whole (an odd row or column, gaps) is zeroed first, and
// overlapping windows add into zeros.
void PoolPlaneBackward(const float* __restrict g, int64_t h, int64_t w,
                       int kernel, int stride, int64_t p, int64_t q,
                       float* __restrict out) {
  const float scale = 1.0f / (kernel * kernel);
  const bool disjoint = stride >= kernel;
  const bool covers_plane =
      disjoint && stride == kernel && p * stride == h && q * stride == w;
  if (!covers_plane) std::fill(out, out + h * w, 0.0f);
  if (kernel == 2 && stride == 2) {  // LeNet's, unrolled
    for (int64_t i = 0; i < p; ++i) {
      float* __restrict top = out + 2 * i * w;
      float* __restrict bottom = top + w;
      for (int64_t j = 0; j < q; ++j) {
        const float v = g[i * q + j] * scale;
        top[2 * j] = top[2 * j + 1] = v;
        bottom[2 * j] = bottom[2 * j + 1] = v;
      }
    }
    return;
  }
  for (int64_t i = 0; i < p; ++i) {
    for (int64_t j = 0; j < q; ++j) {
      const float v = g[i * q + j] * scale;
      for (int r = 0; r < kernel; ++r) {
        float* row = out + (i * stride + r) * w + j * stride;
        for (int s = 0; s < kernel; ++s) {
          if (disjoint) {
            row[s] = v;
          } else {
            row[s] += v;
          }
        }
      }
    }
  }
}

// Runs plane(in, out) for every plane of `in` ([planes, in_size] values)
// into `out` ([planes, out_size]), planes split over the op threads (they
// are independent, so threads do not change results). bfloat16 planes are
// widened into float32 scratch and the results rounded once, a run of
// planes (about 4096 values) a call: the values of converting the whole
// tensors, without float32 copies of them.
template <typename PlaneFn>
void ForEachPlane(const Tensor& in, int64_t in_size, Tensor& out,
                  int64_t out_size, PlaneFn plane) {
  const int64_t planes = out.numel() / std::max<int64_t>(out_size, 1);
  const bool bf16 = in.dtype() == DType::kBFloat16;
  const int64_t run =
      bf16 ? std::max<int64_t>(1, 4096 / std::max(in_size, out_size)) : 1;
  ParallelForElements(planes, kPlaneGrain, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> in_rows, out_rows;
    for (int64_t first = begin; first < end; first += run) {
      const int64_t count = std::min(run, end - first);
      const float* src;
      float* dst;
      if (bf16) {
        in_rows.resize(count * in_size);
        out_rows.resize(count * out_size);
        Bf16ToFloat(in.bf16_data() + first * in_size, in_rows.data(),
                    count * in_size);
        src = in_rows.data();
        dst = out_rows.data();
      } else {
        src = in.data() + first * in_size;
        dst = out.data() + first * out_size;
      }
      for (int64_t k = 0; k < count; ++k) {
        plane(src + k * in_size, dst + k * out_size);
      }
      if (bf16) {
        FloatToBf16(out_rows.data(), out.bf16_data() + first * out_size,
                    count * out_size);
      }
    }
  });
}

Tensor AvgPool2dForwardCpu(const Tensor& x, const Shape& y_shape, int kernel,
                           int stride) {
  Tensor y = Tensor::Uninitialized(y_shape, Device::Cpu(), x.dtype());
  const int64_t h = x.dim(2), w = x.dim(3), p = y_shape[2], q = y_shape[3];
  ForEachPlane(x, h * w, y, p * q, [&](const float* in, float* out) {
    PoolPlane(in, w, kernel, stride, p, q, out);
  });
  return y;
}

Tensor AvgPool2dBackwardCpu(const Shape& x_shape, const Tensor& dy, int kernel,
                            int stride) {
  const int64_t h = x_shape[2], w = x_shape[3], p = dy.dim(2), q = dy.dim(3);
  Tensor dx = Tensor::Uninitialized(x_shape, Device::Cpu(), dy.dtype());
  ForEachPlane(dy, p * q, dx, h * w, [&](const float* g, float* out) {
    PoolPlaneBackward(g, h, w, kernel, stride, p, q, out);
  });
  return dx;
}

Tensor GlobalAvgPoolForwardCpu(const Tensor& x) {
  const int64_t planes = x.dim(0) * x.dim(1), hw = x.dim(2) * x.dim(3);
  Tensor y = Tensor::Uninitialized({x.dim(0), x.dim(1)});
  for (int64_t i = 0; i < planes; ++i) {
    const float* in = x.data() + i * hw;
    float sum = 0.0f;
    for (int64_t j = 0; j < hw; ++j) sum += in[j];
    y.data()[i] = sum / static_cast<float>(hw);
  }
  return y;
}

Tensor GlobalAvgPoolBackwardCpu(const Shape& x_shape, const Tensor& dy) {
  Tensor dx = Tensor::Uninitialized(x_shape);
  const int64_t planes = x_shape[0] * x_shape[1], hw = x_shape[2] * x_shape[3];
  for (int64_t i = 0; i < planes; ++i) {
    const float v = dy.data()[i] / static_cast<float>(hw);
    float* out = dx.data() + i * hw;
    for (int64_t j = 0; j < hw; ++j) out[j] = v;
  }
  return dx;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::avg_pool2d_forward, DeviceType::kCpu,
                        AvgPool2dForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::avg_pool2d_backward, DeviceType::kCpu,
                        AvgPool2dBackwardCpu);
RINGLET_REGISTER_KERNEL(kernels::global_avg_pool_forward, DeviceType::kCpu,
                        GlobalAvgPoolForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::global_avg_pool_backward, DeviceType::kCpu,
                        GlobalAvgPoolBackwardCpu);

}  // namespace ringlet::nn
