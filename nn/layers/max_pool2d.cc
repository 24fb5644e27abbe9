#include "nn/layers/max_pool2d.h"

#include <utility>

namespace ringlet::nn {

MaxPool2d::MaxPool2d(int kernel, int stride, int padding)
    : params_{kernel, stride, padding} {
  CheckMaxPool2dParams(params_);
}

Tensor MaxPool2d::Forward(const Tensor& x) {
  Tensor y = MaxPool2dForward(x, params_);
  input_ = training() ? x : Tensor();
  output_ = training() ? y : Tensor();
  return y;
}

Tensor MaxPool2d::Backward(const Tensor& dy) {
  RequireForwardCache(input_.defined());
  return MaxPool2dBackward(std::exchange(input_, Tensor()),
                           std::exchange(output_, Tensor()), dy, params_);
}

}  // namespace ringlet::nn
