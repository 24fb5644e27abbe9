#include "parallel/module_body.h"

#include <stdexcept>
#include <utility>

namespace ringlet::nn {

ModuleBody::ModuleBody(std::unique_ptr<Module> model, Device device,
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

Tensor ModuleBody::Forward(const Tensor& inputs, bool training) {
  if (training) return model_->Forward(inputs);
  model_->SetTraining(false);
  try {
    Tensor output = model_->Forward(inputs);
    model_->SetTraining(true);
    return output;
  } catch (...) {
    model_->SetTraining(true);
    throw;
  }
}

NamedValues ModuleBody::Parameters() {
  NamedValues out;
  for (Parameter* p : params_) {
    out.names.push_back(p->name);
    out.tensors.push_back(&p->value);
  }
  return out;
}

std::vector<Tensor*> ModuleBody::Gradients() {
  std::vector<Tensor*> grads;
  for (Parameter* p : params_) grads.push_back(&p->grad);
  return grads;
}

NamedValues ModuleBody::Buffers() {
  NamedValues out;
  for (Buffer* b : model_->Buffers()) {
    out.names.push_back(b->name);
    out.tensors.push_back(&b->value);
  }
  return out;
}

}  // namespace ringlet::nn
