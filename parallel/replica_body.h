// The step body: what one replica computes, as the engine
// (parallel/replica_engine.h) drives it. The engine owns everything around
// it (devices, threads, the broadcast, the shards, the gradient reducer,
// the update, evaluation, state); a body is the model and its loss: a
// Module and a loss function (ModuleBody, DataParallel's), or the
// from-scratch chapter's LeNet functions (trainers/lenet_replicas.cc).
//
// Every method runs on the replica's own thread, with its device's stream
// bound. A training step calls, per shard, Forward(training), Loss and
// Backward; a gradient is final once Backward has run for the step's last
// shard. A body over a Module reports each gradient as it becomes final
// (Parameter::on_grad_ready, which a bucketed reducer hooks); a body of
// functions reports nothing and the reducer takes them all at the end.
#ifndef RINGLET_PARALLEL_REPLICA_BODY_H_
#define RINGLET_PARALLEL_REPLICA_BODY_H_

#include <string>
#include <vector>

#include "data/shard.h"
#include "nn/layers/module.h"
#include "nn/ops/loss.h"
#include "nn/tensor.h"

namespace ringlet::parallel {

// Tensors a replica owns and may change, named.
struct NamedValues {
  std::vector<std::string> names;
  std::vector<nn::Tensor*> tensors;
};

class ReplicaBody {
 public:
  virtual ~ReplicaBody() = default;

  // The model's output for `inputs` ([count, one sample's shape...] on
  // the replica's device). Training mode keeps what Backward needs;
  // evaluation mode (training false) uses running statistics.
  virtual nn::Tensor Forward(const nn::Tensor& inputs, bool training) = 0;
  // The loss of `output` against the shard's targets, SUMMED over its
  // samples, with its gradient and count of correct predictions.
  virtual nn::PendingLoss Loss(const nn::Tensor& output,
                               const data::Shard& shard) = 0;
  // Backward of the last training Forward from the loss gradient: adds
  // into Gradients().
  virtual void Backward(const nn::Tensor& dlogits) = 0;
  // Gradients() become zeros (before a step, or each kept-apart shard).
  virtual void ZeroGrad() = 0;

  // The trainable parameters, named, and their gradients in the same
  // order (pointers stay valid from one step to the next only for a body
  // over a Module: ask again after Backward).
  virtual NamedValues Parameters() = 0;
  virtual std::vector<nn::Tensor*> Gradients() = 0;
  // Non-trainable state every replica must agree on (batch norm's running
  // statistics), named; none by default.
  virtual NamedValues Buffers() { return {}; }
  // The Module behind the body, when it has one: the engine gives its
  // layers their ReplicaContext, and a bucketed reducer hooks its
  // parameters. Null for a body of functions.
  virtual nn::Module* module() { return nullptr; }

  // Where the mean over the step's samples is taken. false: the engine
  // divides each loss gradient by the step's samples before Backward, so
  // Gradients() hold means (DDP's). true: Gradients() hold sums and the
  // update divides them (the chapter's sgd(params, lr, batch_size)).
  virtual bool GradientsAreSums() const { return false; }
};

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_REPLICA_BODY_H_
