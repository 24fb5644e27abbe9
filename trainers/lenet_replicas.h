// The from-scratch chapter's training step, written out as the chapter
// does: LeNet's parameters copied to every device (get_params), each batch
// split across the devices (split_batch), forward and backward on every
// device at once, the gradients summed across devices with a collectives
// backend (allreduce), and the same SGD step on every device with the full
// batch size (sgd(params, lr, batch_size)). Beyond the chapter, optional
// momentum, weight decay, gradient clipping, and Adam or AdamW instead of
// SGD (all off by default).
//
// Devices: CPU devices, or GPUs (several replicas may share one); on GPUs
// the parameters, the flat gradient buffer and the update stay in device
// memory.
//
// The step itself is parallel/'s engine (replica_engine.h); this file holds
// the chapter's own parts: the parameters, forward and backward (the step
// body) and the allreduce (the gradient reducer). Reproducible steps
// (micro_shards above 0) swap the allreduce for the engine's
// ReproducibleReducer: the same parameters, bit for bit, on any number of
// devices and processes (parallel/micro_shards.h).
#ifndef RINGLET_TRAINERS_LENET_REPLICAS_H_
#define RINGLET_TRAINERS_LENET_REPLICAS_H_

#include <memory>
#include <string>
#include <vector>

#include "nn/models/lenet.h"
#include "nn/optim/optimizer.h"
#include "parallel/pending_step.h"
#include "parallel/replica_checks.h"
#include "parallel/replica_engine.h"
#include "parallel/replica_group.h"

namespace ringlet::trainers {

// How the summed gradients update the parameters.
struct LeNetUpdate {
  nn::OptimizerOptions optimizer;  // SGD (torch's), Adam or AdamW.
  double clip_grad_norm = 0;       // Above 0: the batch-mean gradient's limit.
  // The gradients' type on the wire: float32, or bfloat16 on CPU devices
  // (cast once, summed with one rounding per step, cast back).
  collectives::DataType grad_dtype = collectives::DataType::kFloat32;
};

// The chapter's update: plain SGD at `lr`.
inline LeNetUpdate PlainSgd(float lr) {
  LeNetUpdate update;
  update.optimizer.lr = lr;
  return update;
}

class LeNetReplicas {
 public:
  // Copies `params` to every device of `group_options` (see ReplicaGroup
  // for the errors). Throws std::invalid_argument for a bad `update`.
  LeNetReplicas(const nn::LeNetParams& params,
                const std::vector<nn::Device>& devices,
                const parallel::ReplicaGroupOptions& group_options,
                const LeNetUpdate& update, int micro_shards = 0);

  // Loss is the sum over the batch (the chapter's reduction='none' then
  // sum); the step divides by the batch's true size, however it was split.
  parallel::TrainStepStats TrainStep(const std::vector<data::Shard>& shards) {
    return QueueStep(shards).Finish();
  }
  // The same, given this process's shards (data::Batch::Local()).
  parallel::TrainStepStats TrainStep(const data::LocalBatch& batch) {
    return engine_.QueueStep(std::vector<data::LocalBatch>{batch}).Finish();
  }
  // The same step, queued: on GPUs the host does not wait for it (see
  // parallel::PendingStep); the statistics come from Finish().
  parallel::PendingStep QueueStep(const std::vector<data::Shard>& shards) {
    return engine_.QueueStep(std::vector<std::vector<data::Shard>>{shards});
  }
  // One step over several micro-batches: their gradients added up, then
  // summed across devices once (gradient accumulation).
  parallel::PendingStep QueueAccumulatedStep(
      const std::vector<std::vector<data::Shard>>& micro_batches) {
    return engine_.QueueStep(micro_batches);
  }
  int64_t CountCorrect(const std::vector<data::Shard>& shards) {
    return engine_.Evaluate(shards).correct;
  }
  // The parameters, then the optimizer's state (Optimizer::State); device
  // 0's.
  parallel::NamedTensors State() { return engine_.State(0); }
  void SetLearningRate(double lr) { engine_.set_lr(static_cast<float>(lr)); }
  void LoadState(const std::vector<const float*>& values) {
    engine_.LoadState(values);
  }
  std::string CompareReplicas() { return engine_.CompareReplicas(); }

  // This process's device `device` (0 .. local devices - 1); on a GPU the
  // tensors are device memory.
  const nn::LeNetParams& params(int device);
  parallel::ReplicaEngine& engine() { return engine_; }

 private:
  parallel::ReplicaEngine engine_;
};

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_LENET_REPLICAS_H_
