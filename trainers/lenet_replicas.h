// The from-scratch chapter's training step, written out as the chapter
// does: LeNet's parameters copied to every device (get_params), each batch
// split across the devices (split_batch), forward and backward on every
// device at once, the gradients summed across devices with a collectives
// backend (allreduce), and the same SGD step on every device with the full
// batch size (sgd(params, lr, batch_size)).
#ifndef RINGLET_TRAINERS_LENET_REPLICAS_H_
#define RINGLET_TRAINERS_LENET_REPLICAS_H_

#include <string>
#include <vector>

#include "nn/models/lenet.h"
#include "nn/parallel/replica_checks.h"
#include "nn/parallel/replica_group.h"
#include "trainers/common/training_loop.h"

namespace ringlet::trainers {

class LeNetReplicas : public ParallelTrainer {
 public:
  // Copies `params` to every device of `group_options` (see ReplicaGroup
  // for the errors).
  LeNetReplicas(const nn::LeNetParams& params,
                const std::vector<nn::Device>& devices,
                const nn::ReplicaGroupOptions& group_options, float lr);

  int num_devices() const override { return group_.ranks(); }
  // Loss is the sum over the batch (the chapter's reduction='none' then
  // sum); the step divides by the batch's true size, however it was split.
  nn::TrainStepStats TrainStep(
      const std::vector<nn::ReplicaInput>& shards) override;
  int64_t CountCorrect(const std::vector<nn::ReplicaInput>& shards) override;
  // The parameters (no other state: plain SGD), device 0's.
  nn::NamedTensors State() override { return StateOf(0); }
  void LoadState(const std::vector<const float*>& values) override;
  std::string CompareReplicas() override;

  // This process's device `device` (0 .. local devices - 1).
  const nn::LeNetParams& params(int device) const {
    return replicas_[device].params;
  }

 private:
  nn::NamedTensors StateOf(int device);

  struct Replica {
    nn::LeNetParams params;
    std::vector<float> grads;  // All gradients, flat, for one allreduce.
    nn::TrainStepStats stats;
  };

  nn::ReplicaGroup group_;
  float lr_;
  std::vector<Replica> replicas_;
};

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_LENET_REPLICAS_H_
