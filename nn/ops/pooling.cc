#include "nn/ops/pooling.h"

#include <algorithm>
#include <string>

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/gpu_ops.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

Shape PooledShape(const char* op, const Shape& x, int kernel, int stride) {
  if (x.size() != 4) {
    throw ShapeError(std::string(op) + ": input has shape " + ToString(x) +
                     ", expected [N, C, H, W]");
  }
  if (kernel < 1 || stride < 1) {
    throw ShapeError(std::string(op) + ": kernel " + std::to_string(kernel) +
                     " and stride " + std::to_string(stride) + " must be >= 1");
  }
  if (x[2] < kernel || x[3] < kernel) {
    throw ShapeError(std::string(op) + ": a " + std::to_string(kernel) + "x" +
                     std::to_string(kernel) + " window does not fit input " +
                     ToString(x));
  }
  return {x[0], x[1], (x[2] - kernel) / stride + 1,
          (x[3] - kernel) / stride + 1};
}

// Planes per thread below which a thread costs more than it saves.
constexpr int64_t kPlaneGrain = 64;

}  // namespace

Tensor AvgPool2dForward(const Tensor& x, int kernel, int stride) {
  if (x.dtype() == DType::kBFloat16) {  // In the input's type (autocast.h).
    return AsDType(
        AvgPool2dForward(AsDType(x, DType::kFloat32), kernel, stride),
        DType::kBFloat16);
  }
  const Shape ys = PooledShape("avgpool2d", x.shape(), kernel, stride);
  const Device device = OpDevice("avgpool2d", {&x});
  if (device.is_cuda()) {
    return GpuOpsFor(device).AvgPool2dForward(x, kernel, stride);
  }
  Tensor y = Tensor::Uninitialized(ys);
  const int64_t h = x.dim(2), w = x.dim(3), p = ys[2], q = ys[3];
  const float scale = 1.0f / (kernel * kernel);
  const float* x_data = x.data();
  float* y_data = y.data();
  // Planes are independent, so threads do not change results.
  ParallelForElements(
      ys[0] * ys[1], kPlaneGrain, [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
          const float* in = x_data + plane * h * w;
          float* __restrict out = y_data + plane * p * q;
          if (kernel == 2 && stride == 2) {  // LeNet's: the same sums, unrolled
            for (int64_t i = 0; i < p; ++i) {
              const float* __restrict top = in + 2 * i * w;
              const float* __restrict bottom = top + w;
              for (int64_t j = 0; j < q; ++j) {
                out[i * q + j] =
                    (((top[2 * j] + top[2 * j + 1]) + bottom[2 * j]) +
                     bottom[2 * j + 1]) *
                    scale;
              }
            }
            continue;
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
      });
  return y;
}

Tensor AvgPool2dBackward(const Shape& x_shape, const Tensor& dy, int kernel,
                         int stride) {
  if (dy.dtype() == DType::kBFloat16) {
    return AsDType(AvgPool2dBackward(x_shape, AsDType(dy, DType::kFloat32),
                                     kernel, stride),
                   DType::kBFloat16);
  }
  const Shape ys = PooledShape("avgpool2d backward", x_shape, kernel, stride);
  ExpectShape("avgpool2d backward", "output gradient", dy, ys);
  const Device device = OpDevice("avgpool2d backward", {&dy});
  if (device.is_cuda()) {
    return GpuOpsFor(device).AvgPool2dBackward(x_shape, dy, kernel, stride);
  }
  const int64_t h = x_shape[2], w = x_shape[3], p = ys[2], q = ys[3];
  // Windows that do not overlap (stride >= kernel: LeNet's 2x2 stride 2)
  // each write their own values, so no zeroed tensor to add into (zeroing
  // and adding were 9% of a LeNet step); only a plane the windows do not
  // cover whole (an odd row or column, gaps) is zeroed first.
  const bool disjoint = stride >= kernel;
  const bool covers_plane =
      disjoint && stride == kernel && p * stride == h && q * stride == w;
  Tensor dx = disjoint ? Tensor::Uninitialized(x_shape) : Tensor(x_shape);
  const float scale = 1.0f / (kernel * kernel);
  float* dx_data = dx.data();
  const float* dy_data = dy.data();
  ParallelForElements(
      ys[0] * ys[1], kPlaneGrain, [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
          float* __restrict out = dx_data + plane * h * w;
          const float* __restrict g = dy_data + plane * p * q;
          if (disjoint && !covers_plane) std::fill(out, out + h * w, 0.0f);
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
            continue;
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
      });
  return dx;
}

Tensor GlobalAvgPoolForward(const Tensor& x) {
  if (x.dtype() == DType::kBFloat16) {
    return AsDType(GlobalAvgPoolForward(AsDType(x, DType::kFloat32)),
                   DType::kBFloat16);
  }
  ExpectShape("global_avg_pool", "input", x, {-1, -1, -1, -1});
  const Device device = OpDevice("global_avg_pool", {&x});
  if (device.is_cuda()) {
    return GpuOpsFor(device).GlobalAvgPoolForward(x);
  }
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

Tensor GlobalAvgPoolBackward(const Shape& x_shape, const Tensor& dy) {
  if (dy.dtype() == DType::kBFloat16) {
    return AsDType(GlobalAvgPoolBackward(x_shape, AsDType(dy, DType::kFloat32)),
                   DType::kBFloat16);
  }
  if (x_shape.size() != 4) {
    throw ShapeError("global_avg_pool backward: input shape " +
                     ToString(x_shape) + " is not [N, C, H, W]");
  }
  ExpectShape("global_avg_pool backward", "output gradient", dy,
              {x_shape[0], x_shape[1]});
  const Device device = OpDevice("global_avg_pool backward", {&dy});
  if (device.is_cuda()) {
    return GpuOpsFor(device).GlobalAvgPoolBackward(x_shape, dy);
  }
  Tensor dx = Tensor::Uninitialized(x_shape);
  const int64_t planes = x_shape[0] * x_shape[1], hw = x_shape[2] * x_shape[3];
  for (int64_t i = 0; i < planes; ++i) {
    const float v = dy.data()[i] / static_cast<float>(hw);
    float* out = dx.data() + i * hw;
    for (int64_t j = 0; j < hw; ++j) out[j] = v;
  }
  return dx;
}

}  // namespace ringlet::nn
