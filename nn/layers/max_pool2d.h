// Max pooling as a module, PyTorch's nn.MaxPool2d(kernel, stride=kernel,
// padding=0): the pooling of AlexNet, VGG, NiN, GoogLeNet and the book's
// ResNet stem (3, stride 2, padding 1). Keeps its input and output for
// Backward (cuDNN's backward reads both; the CPU's finds the maxima again).
#ifndef RINGLET_NN_LAYERS_MAX_POOL2D_H_
#define RINGLET_NN_LAYERS_MAX_POOL2D_H_

#include <string>

#include "nn/layers/module.h"
#include "nn/ops/max_pool.h"

namespace ringlet::nn {

class MaxPool2d : public Module {
 public:
  // Throws ShapeError for a kernel or stride below 1 or a padding outside
  // [0, kernel / 2].
  MaxPool2d(int kernel, int stride, int padding = 0);
  explicit MaxPool2d(int kernel) : MaxPool2d(kernel, kernel) {}
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "maxpool2d"; }
  const MaxPool2dParams& params() const { return params_; }

 private:
  MaxPool2dParams params_;
  Tensor input_, output_;
};

}  // namespace ringlet::nn

#endif  // RINGLET_NN_LAYERS_MAX_POOL2D_H_
