#include "nn/ops/pooling.h"

#include <string>

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"

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

}  // namespace

Tensor AvgPool2dForward(const Tensor& x, int kernel, int stride) {
  const Shape ys = PooledShape("avgpool2d", x.shape(), kernel, stride);
  return kernels::avg_pool2d_forward.For(OpDeviceOfAnyType("avgpool2d", {&x}))(
      x, ys, kernel, stride);
}

Tensor AvgPool2dBackward(const Shape& x_shape, const Tensor& dy, int kernel,
                         int stride) {
  const Shape ys = PooledShape("avgpool2d backward", x_shape, kernel, stride);
  ExpectShape("avgpool2d backward", "output gradient", dy, ys);
  return kernels::avg_pool2d_backward.For(OpDeviceOfAnyType(
      "avgpool2d backward", {&dy}))(x_shape, dy, kernel, stride);
}

// bfloat16 in float32 (autocast.h), the output in the input's type.
Tensor GlobalAvgPoolForward(const Tensor& x) {
  if (x.dtype() == DType::kBFloat16) {
    return AsDType(GlobalAvgPoolForward(AsDType(x, DType::kFloat32)),
                   DType::kBFloat16);
  }
  ExpectShape("global_avg_pool", "input", x, {-1, -1, -1, -1});
  return kernels::global_avg_pool_forward.For(
      OpDevice("global_avg_pool", {&x}))(x);
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
  return kernels::global_avg_pool_backward.For(
      OpDevice("global_avg_pool backward", {&dy}))(x_shape, dy);
}

}  // namespace ringlet::nn
