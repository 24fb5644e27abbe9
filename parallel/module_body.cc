#include "parallel/module_body.h"

#include <stdexcept>
#include <utility>

namespace ringlet::parallel {

ModuleBody::ModuleBody(std::unique_ptr<nn::Module> model, nn::Device device,
                       LossFunction loss)
    : model_(std::move(model)), loss_(std::move(loss)) {
  if (model_ == nullptr) {
    throw std::invalid_argument("data parallel: the model factory gave null");
  }
  if (!loss_) throw std::invalid_argument("data parallel: no loss function");
  if (device.is_cuda()) model_->To(device);
  model_->SetInputGradientNeeded(false);
  params_ = model_->Parameters();
}

nn::Tensor ModuleBody::Forward(const nn::Tensor& inputs, bool training) {
  if (training) return model_->Forward(inputs);
  model_->SetTraining(false);
  try {
    nn::Tensor output = model_->Forward(inputs);
    model_->SetTraining(true);
    return output;
  } catch (...) {
    model_->SetTraining(true);
    throw;
  }
}

NamedValues ModuleBody::Parameters() {
  NamedValues out;
  for (nn::Parameter* p : params_) {
    out.names.push_back(p->name);
    out.tensors.push_back(&p->value);
  }
  return out;
}

std::vector<nn::Tensor*> ModuleBody::Gradients() {
  std::vector<nn::Tensor*> grads;
  for (nn::Parameter* p : params_) grads.push_back(&p->grad);
  return grads;
}

NamedValues ModuleBody::Buffers() {
  NamedValues out;
  for (nn::Buffer* b : model_->Buffers()) {
    out.names.push_back(b->name);
    out.tensors.push_back(&b->value);
  }
  return out;
}

}  // namespace ringlet::parallel
