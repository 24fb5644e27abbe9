#include "nn/ops/max_pool.h"

#include <string>

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"

namespace ringlet::nn {

void CheckMaxPool2dParams(const MaxPool2dParams& params) {
  const std::string k = std::to_string(params.kernel);
  if (params.kernel < 1 || params.stride < 1) {
    throw ShapeError("maxpool2d: kernel " + k + " and stride " +
                     std::to_string(params.stride) + " must be >= 1");
  }
  if (params.padding < 0 || params.padding > params.kernel / 2) {
    throw ShapeError("maxpool2d: padding " + std::to_string(params.padding) +
                     " must be in [0, " + std::to_string(params.kernel / 2) +
                     "] (at most half the kernel " + k + ")");
  }
}

Shape MaxPool2dOutputShape(const Shape& x, const MaxPool2dParams& params) {
  CheckMaxPool2dParams(params);
  if (x.size() != 4) {
    throw ShapeError("maxpool2d: input has shape " + ToString(x) +
                     ", expected [N, C, H, W]");
  }
  const std::string k = std::to_string(params.kernel);
  const int64_t h = x[2] + 2 * params.padding, w = x[3] + 2 * params.padding;
  if (h < params.kernel || w < params.kernel) {
    throw ShapeError("maxpool2d: a " + k + "x" + k +
                     " window does not fit input " + ToString(x) +
                     " padded by " + std::to_string(params.padding));
  }
  return {x[0], x[1], (h - params.kernel) / params.stride + 1,
          (w - params.kernel) / params.stride + 1};
}

Tensor MaxPool2dForward(const Tensor& x, const MaxPool2dParams& params) {
  if (x.dtype() == DType::kBFloat16) {
    return AsDType(MaxPool2dForward(AsDType(x, DType::kFloat32), params),
                   DType::kBFloat16);
  }
  const Shape y_shape = MaxPool2dOutputShape(x.shape(), params);
  return kernels::max_pool2d_forward.For(OpDevice("maxpool2d", {&x}))(
      x, y_shape, params);
}

Tensor MaxPool2dBackward(const Tensor& x, const Tensor& y, const Tensor& dy,
                         const MaxPool2dParams& params) {
  if (x.dtype() != DType::kFloat32 || y.dtype() != DType::kFloat32 ||
      dy.dtype() != DType::kFloat32) {
    return AsDType(MaxPool2dBackward(AsDType(x, DType::kFloat32),
                                     AsDType(y, DType::kFloat32),
                                     AsDType(dy, DType::kFloat32), params),
                   dy.dtype());
  }
  const Shape y_shape = MaxPool2dOutputShape(x.shape(), params);
  ExpectShape("maxpool2d backward", "output", y, y_shape);
  ExpectShape("maxpool2d backward", "output gradient", dy, y_shape);
  return kernels::max_pool2d_backward.For(
      OpDevice("maxpool2d backward", {&x, &y, &dy}))(x, y, dy, params);
}

}  // namespace ringlet::nn
