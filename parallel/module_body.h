// The step body of any Module: its Forward and Backward and a loss of the
// caller's (DataParallel's body; a program of its own may hand one to
// ReplicaEngine directly). Its parameters report their gradients as
// backward finishes them (Parameter::on_grad_ready), so a bucketed reducer
// overlaps the sums with backward.
#ifndef RINGLET_PARALLEL_MODULE_BODY_H_
#define RINGLET_PARALLEL_MODULE_BODY_H_

#include <memory>
#include <vector>

#include "nn/device.h"
#include "nn/layers/module.h"
#include "parallel/losses.h"
#include "parallel/replica_body.h"

namespace ringlet::parallel {

class ModuleBody : public ReplicaBody {
 public:
  // Moves `model` to `device` (a GPU's) and tells it the input's gradient
  // is not needed (the step discards it). `loss` must not be null.
  ModuleBody(std::unique_ptr<nn::Module> model, nn::Device device,
             LossFunction loss);

  nn::Tensor Forward(const nn::Tensor& inputs, bool training) override;
  nn::PendingLoss Loss(const nn::Tensor& output,
                       const data::Shard& shard) override {
    return loss_(output, shard);
  }
  void Backward(const nn::Tensor& dlogits) override {
    model_->Backward(dlogits);
  }
  void ZeroGrad() override { model_->ZeroGrad(); }
  NamedValues Parameters() override;
  std::vector<nn::Tensor*> Gradients() override;
  NamedValues Buffers() override;
  nn::Module* module() override { return model_.get(); }

 private:
  std::unique_ptr<nn::Module> model_;
  LossFunction loss_;
  std::vector<nn::Parameter*> params_;  // The model's, in its order.
};

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_MODULE_BODY_H_
