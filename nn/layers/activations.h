// The activations of the book's other chapters as modules, PyTorch's
// nn.Sigmoid, nn.Tanh and nn.Softmax: the original LeNet's sigmoid, RNNs'
// tanh, and class probabilities from a classifier's logits. Each keeps its
// output for Backward (their gradients are written from it).
#ifndef RINGLET_NN_LAYERS_ACTIVATIONS_H_
#define RINGLET_NN_LAYERS_ACTIVATIONS_H_

#include <string>

#include "nn/layers/module.h"

namespace ringlet::nn {

class Sigmoid : public Module {
 public:
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "sigmoid"; }

 private:
  Tensor output_;
};

class Tanh : public Module {
 public:
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "tanh"; }

 private:
  Tensor output_;
};

// Softmax over axis `dim` of its input, which must be the last (-1, or
// rank - 1: [N, classes] takes 1, as nn.Softmax(dim=1)); another axis is a
// ShapeError saying to move it last. The losses take logits: put Softmax
// after training's loss, for predictions, not before it.
class Softmax : public Module {
 public:
  explicit Softmax(int dim = -1) : dim_(dim) {}
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "softmax"; }

 private:
  int dim_;
  Tensor output_;
};

}  // namespace ringlet::nn

#endif  // RINGLET_NN_LAYERS_ACTIVATIONS_H_
