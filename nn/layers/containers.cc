#include "nn/layers/containers.h"

#include "nn/ops/elementwise.h"

namespace ringlet::nn {

Module* Sequential::Add(std::unique_ptr<Module> child, std::string name) {
  if (name.empty()) name = std::to_string(children_.size());
  child->SetTraining(training());
  child->SetPath(JoinName(path(), name));
  children_.emplace_back(std::move(name), std::move(child));
  return children_.back().second.get();
}

Tensor Sequential::Forward(const Tensor& x) {
  Tensor y = x;
  for (auto& [name, child] : children_) y = child->Forward(y);
  return y;
}

Tensor Sequential::Backward(const Tensor& dy) {
  Tensor g = dy;
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
    g = it->second->Backward(g);
  }
  return g;
}

void Sequential::SetInputGradientNeeded(bool needed) {
  if (!children_.empty())
    children_.front().second->SetInputGradientNeeded(needed);
}

void Sequential::CollectParameters(const std::string& prefix,
                                   std::vector<Parameter*>* out) {
  for (auto& [name, child] : children_) {
    child->CollectParameters(JoinName(prefix, name), out);
  }
}

void Sequential::CollectBuffers(const std::string& prefix,
                                std::vector<Buffer*>* out) {
  for (auto& [name, child] : children_) {
    child->CollectBuffers(JoinName(prefix, name), out);
  }
}

void Sequential::SetTraining(bool training) {
  Module::SetTraining(training);
  for (auto& [name, child] : children_) child->SetTraining(training);
}

void Sequential::SetPath(const std::string& path) {
  Module::SetPath(path);
  for (auto& [name, child] : children_) child->SetPath(JoinName(path, name));
}

std::vector<Module*> Sequential::Children() {
  std::vector<Module*> out;
  for (auto& [name, child] : children_) out.push_back(child.get());
  return out;
}

Residual::Residual(int64_t in_channels, int64_t out_channels, bool use_1x1conv,
                   int stride)
    : conv1_(in_channels, out_channels, 3, stride, 1),
      conv2_(out_channels, out_channels, 3, 1, 1),
      conv3_(use_1x1conv ? std::make_unique<Conv2d>(in_channels, out_channels,
                                                    1, stride)
                         : nullptr),
      bn1_(out_channels, /*relu=*/true),
      bn2_(out_channels, /*relu=*/true) {
  if (!use_1x1conv && (in_channels != out_channels || stride != 1)) {
    throw ShapeError(
        "residual: without a 1x1 convolution the shortcut needs "
        "in_channels == out_channels and stride 1, got " +
        std::to_string(in_channels) + " -> " + std::to_string(out_channels) +
        ", stride " + std::to_string(stride));
  }
  Residual::SetPath("");  // Names the members' parameters from the start.
}

void Residual::SetPath(const std::string& path) {
  Module::SetPath(path);
  conv1_.SetPath(JoinName(path, "conv1"));
  conv2_.SetPath(JoinName(path, "conv2"));
  if (conv3_) conv3_->SetPath(JoinName(path, "conv3"));
  bn1_.SetPath(JoinName(path, "bn1"));
  bn2_.SetPath(JoinName(path, "bn2"));
}

Tensor Residual::Forward(const Tensor& x) {
  const Tensor y = conv2_.Forward(bn1_.Forward(conv1_.Forward(x)));
  return bn2_.ForwardAdding(y, conv3_ ? conv3_->Forward(x) : x);
}

Tensor Residual::Backward(const Tensor& dy) {
  Tensor dx =
      conv1_.Backward(bn1_.Backward(conv2_.Backward(bn2_.Backward(dy))));
  // The gradient after the last ReLU flows to the shortcut too.
  const Tensor g = bn2_.TakeResidualGradient();
  AddInPlace(dx, conv3_ ? conv3_->Backward(g) : g);
  return dx;
}

void Residual::CollectParameters(const std::string& prefix,
                                 std::vector<Parameter*>* out) {
  conv1_.CollectParameters(JoinName(prefix, "conv1"), out);
  conv2_.CollectParameters(JoinName(prefix, "conv2"), out);
  if (conv3_) conv3_->CollectParameters(JoinName(prefix, "conv3"), out);
  bn1_.CollectParameters(JoinName(prefix, "bn1"), out);
  bn2_.CollectParameters(JoinName(prefix, "bn2"), out);
}

void Residual::CollectBuffers(const std::string& prefix,
                              std::vector<Buffer*>* out) {
  bn1_.CollectBuffers(JoinName(prefix, "bn1"), out);
  bn2_.CollectBuffers(JoinName(prefix, "bn2"), out);
}

void Residual::SetTraining(bool training) {
  Module::SetTraining(training);
  for (Module* m :
       std::initializer_list<Module*>{&conv1_, &conv2_, &bn1_, &bn2_}) {
    m->SetTraining(training);
  }
  if (conv3_) conv3_->SetTraining(training);
}

std::vector<Module*> Residual::Children() {
  std::vector<Module*> out = {&conv1_, &bn1_, &conv2_, &bn2_};
  if (conv3_) out.push_back(conv3_.get());
  return out;
}

int FoldConvBiasesIntoBatchNorms(Module& root) {
  // Both list their children in the order data flows through them
  // (Residual: conv1, bn1, conv2, bn2, [conv3]).
  const bool in_order = dynamic_cast<Sequential*>(&root) != nullptr ||
                        dynamic_cast<Residual*>(&root) != nullptr;
  const std::vector<Module*> children = root.Children();
  int folded = 0;
  for (size_t i = 0; i < children.size(); ++i) {
    if (in_order && i + 1 < children.size()) {
      auto* conv = dynamic_cast<Conv2d*>(children[i]);
      auto* bn = dynamic_cast<BatchNorm2d*>(children[i + 1]);
      if (conv != nullptr && bn != nullptr && conv->FoldBiasInto(*bn)) {
        ++folded;
      }
    }
    folded += FoldConvBiasesIntoBatchNorms(*children[i]);
  }
  return folded;
}

}  // namespace ringlet::nn
