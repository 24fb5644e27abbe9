#include "nn/layers/module.h"

#include <vector>

#include "nn/ops/elementwise.h"

namespace ringlet::nn {

void AccumulateGrad(Parameter& p, const Tensor& grad) {
  AddInPlace(p.grad, grad);
  GradReady(p);
}

void GradReady(Parameter& p) {
  if (p.on_grad_ready) p.on_grad_ready(p);
}

void Module::CollectParameters(const std::string&, std::vector<Parameter*>*) {}
void Module::CollectBuffers(const std::string&, std::vector<Buffer*>*) {}

std::vector<Parameter*> Module::Parameters() {
  std::vector<Parameter*> out;
  CollectParameters(path_, &out);
  return out;
}

std::vector<Buffer*> Module::Buffers() {
  std::vector<Buffer*> out;
  CollectBuffers(path_, &out);
  return out;
}

void Module::ZeroGrad() {
  std::vector<Tensor*> grads;
  for (Parameter* p : Parameters()) grads.push_back(&p->grad);
  ZeroAll(grads);  // One launch on a GPU, not one per parameter.
}

void Module::To(Device device) {
  for (Parameter* p : Parameters()) {
    p->value = p->value.To(device);
    p->grad = p->grad.To(device);
  }
  for (Buffer* b : Buffers()) b->value = b->value.To(device);
  VisitModules(*this, [](Module& m) { m.OnTensorsMoved(); });
}

void Module::RequireForwardCache(bool have_cache) const {
  if (!have_cache) {
    throw ModeError(kind() +
                    ": Backward needs a Forward in training mode first; call "
                    "SetTraining(true) and Forward before Backward");
  }
}

void VisitModules(Module& root, const std::function<void(Module&)>& fn) {
  fn(root);
  for (Module* child : root.Children()) VisitModules(*child, fn);
}

std::string JoinName(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

int64_t CountElements(const std::vector<Parameter*>& params) {
  int64_t n = 0;
  for (const Parameter* p : params) n += p->value.numel();
  return n;
}

int64_t CountElements(const std::vector<Buffer*>& buffers) {
  int64_t n = 0;
  for (const Buffer* b : buffers) n += b->value.numel();
  return n;
}

}  // namespace ringlet::nn
