#include "nn/layers/activations.h"

#include <string>

#include "nn/ops/sigmoid_tanh.h"
#include "nn/ops/softmax.h"

namespace ringlet::nn {

Tensor Sigmoid::Forward(const Tensor& x) {
  Tensor y = SigmoidForward(x);
  output_ = training() ? y : Tensor();
  return y;
}

Tensor Sigmoid::Backward(const Tensor& dy) {
  RequireForwardCache(output_.defined());
  Tensor dx = SigmoidBackward(output_, dy);
  output_ = Tensor();
  return dx;
}

Tensor Tanh::Forward(const Tensor& x) {
  Tensor y = TanhForward(x);
  output_ = training() ? y : Tensor();
  return y;
}

Tensor Tanh::Backward(const Tensor& dy) {
  RequireForwardCache(output_.defined());
  Tensor dx = TanhBackward(output_, dy);
  output_ = Tensor();
  return dx;
}

Tensor Softmax::Forward(const Tensor& x) {
  const int rank = static_cast<int>(x.rank());
  if (rank == 0 || (dim_ != -1 && dim_ != rank - 1)) {
    throw ShapeError("softmax: dim " + std::to_string(dim_) +
                     " of input shape " + ToString(x.shape()) +
                     " is not its last axis; softmax runs over the last axis "
                     "(Softmax(-1)): move the class axis last first");
  }
  Tensor y = SoftmaxForward(x);
  output_ = training() ? y : Tensor();
  return y;
}

Tensor Softmax::Backward(const Tensor& dy) {
  RequireForwardCache(output_.defined());
  Tensor dx = SoftmaxBackward(output_, dy);
  output_ = Tensor();
  return dx;
}

}  // namespace ringlet::nn
