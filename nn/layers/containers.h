// Sequential and Residual: the containers of the d2l ResNet.
#ifndef RINGLET_NN_LAYERS_CONTAINERS_H_
#define RINGLET_NN_LAYERS_CONTAINERS_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/layers/layers.h"
#include "nn/layers/module.h"

namespace ringlet::nn {

// Runs its children in order; parameters are named "<child name>.<...>".
class Sequential : public Module {
 public:
  Sequential() = default;
  // Adds a child named `name` (defaults to its index) and returns it.
  Module* Add(std::unique_ptr<Module> child, std::string name = "");
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "sequential"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<Parameter*>* out) override;
  void CollectBuffers(const std::string& prefix,
                      std::vector<Buffer*>* out) override;
  void SetTraining(bool training) override;
  void SetPath(const std::string& path) override;
  // Passed to the first child, whose input is this one's.
  void SetInputGradientNeeded(bool needed) override;
  std::vector<Module*> Children() override;
  size_t size() const { return children_.size(); }

 private:
  std::vector<std::pair<std::string, std::unique_ptr<Module>>> children_;
};

// d2l's Residual unit: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)),
// 3x3 convolutions with padding 1, the first with `stride`; the shortcut is
// a 1x1 convolution with `stride` when use_1x1conv, else x itself. The
// ReLUs and the add run inside the batch norms' passes (BatchNorm2d's
// fused ReLU and ForwardAdding).
class Residual : public Module {
 public:
  Residual(int64_t in_channels, int64_t out_channels, bool use_1x1conv,
           int stride);
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "residual"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<Parameter*>* out) override;
  void CollectBuffers(const std::string& prefix,
                      std::vector<Buffer*>* out) override;
  void SetTraining(bool training) override;
  void SetPath(const std::string& path) override;
  std::vector<Module*> Children() override;

 private:
  Conv2d conv1_, conv2_;
  std::unique_ptr<Conv2d> conv3_;
  BatchNorm2d bn1_, bn2_;  // Each with its ReLU; bn2_ adds the shortcut.
};

// Folds the bias of every convolution whose output goes straight into a
// batch norm into that batch norm (Conv2d::FoldBiasInto), inside `root`
// and all it contains: in a Sequential a Conv2d child followed by a
// BatchNorm2d child, in a Residual conv1 -> bn1 and conv2 -> bn2. Returns
// how many were folded. Training gives the same numbers (up to rounding)
// without the cost of those biases.
int FoldConvBiasesIntoBatchNorms(Module& root);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_LAYERS_CONTAINERS_H_
