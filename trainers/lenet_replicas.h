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
// Reproducible steps (micro_shards above 0): each batch comes
// cut into that many micro-shards, whatever the devices; each device runs
// its own (nn::ShardsOfRanks) one at a time and the micro-shards' gradients
// are summed by collectives' ReproducibleAllReduce in place of the
// allreduce, so the parameters are the same bits on any number of devices
// and processes (parallel/micro_shards.h; on GPUs the sums go through
// host memory).
#ifndef RINGLET_TRAINERS_LENET_REPLICAS_H_
#define RINGLET_TRAINERS_LENET_REPLICAS_H_

#include <memory>
#include <string>
#include <vector>

#include "nn/models/lenet.h"
#include "nn/optim/optimizer.h"
#include "parallel/micro_shards.h"
#include "parallel/pending_step.h"
#include "parallel/replica_checks.h"
#include "parallel/replica_group.h"
#include "trainers/common/training_loop.h"

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

class LeNetReplicas : public ParallelTrainer {
 public:
  // Copies `params` to every device of `group_options` (see ReplicaGroup
  // for the errors). Throws std::invalid_argument for a bad `update`.
  LeNetReplicas(const nn::LeNetParams& params,
                const std::vector<nn::Device>& devices,
                const nn::ReplicaGroupOptions& group_options,
                const LeNetUpdate& update, int micro_shards = 0);

  int num_devices() const override { return group_.ranks(); }
  nn::Range LocalShards(int shards) const override {
    return nn::ShardsOfRanks(shards, group_.first_rank(), group_.size(),
                             group_.ranks());
  }
  int num_shards() const override {
    return micro_shards_ > 0 ? micro_shards_ : num_devices();
  }
  // Loss is the sum over the batch (the chapter's reduction='none' then
  // sum); the step divides by the batch's true size, however it was split.
  nn::TrainStepStats TrainStep(const std::vector<nn::Shard>& shards) override;
  // The same step, queued: on GPUs the host does not wait for it (see
  // nn::PendingStep); the statistics come from Finish().
  nn::PendingStep QueueStep(const std::vector<nn::Shard>& shards) override;
  // One step over several micro-batches: their gradients added up, then
  // summed across devices once (gradient accumulation).
  nn::PendingStep QueueAccumulatedStep(
      const std::vector<std::vector<nn::Shard>>& micro_batches) override;
  int64_t CountCorrect(const std::vector<nn::Shard>& shards) override;
  // The parameters, then the optimizer's state (Optimizer::State); device
  // 0's.
  nn::NamedTensors State() override { return StateOf(0); }
  void SetLearningRate(double lr) override;
  void LoadState(const std::vector<const float*>& values) override;
  std::string CompareReplicas() override;

  // This process's device `device` (0 .. local devices - 1); on a GPU the
  // tensors are device memory.
  const nn::LeNetParams& params(int device) const {
    return replicas_[device].params;
  }

 private:
  // The live tensors (device memory on a GPU), and host copies of them.
  nn::NamedTensors LiveStateOf(int device);
  nn::NamedTensors StateOf(int device);
  nn::PendingStep QueueReproducibleStep(
      const std::vector<std::vector<nn::Shard>>& micro_batches);

  struct Replica {
    nn::LeNetParams params;
    std::unique_ptr<nn::Optimizer> optimizer;  // Of `params`.
    std::vector<nn::Tensor> host_state;        // StateOf's copies on a GPU.
    std::unique_ptr<nn::ReproducibleGradients> micro_grads;
  };

  nn::ReplicaGroup group_;
  LeNetUpdate update_;
  int micro_shards_ = 0;
  std::vector<Replica> replicas_;
};

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_LENET_REPLICAS_H_
