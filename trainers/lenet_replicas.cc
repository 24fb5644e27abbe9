#include "trainers/lenet_replicas.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "nn/ops/elementwise.h"
#include "nn/ops/loss.h"
#include "parallel/bf16_wire.h"
#include "parallel/flat_tensors.h"
#include "parallel/guarded_update.h"
#include "parallel/replica_checks.h"

namespace ringlet::trainers {
namespace {

nn::ReplicaGroupOptions WithHostComms(nn::ReplicaGroupOptions options,
                                      bool host_comms) {
  options.host_comms = host_comms;
  return options;
}

// `params` copied to `device` (CPU devices share the host's tensors).
nn::LeNetParams CopyTo(const nn::LeNetParams& params, nn::Device device) {
  return device.is_cuda() ? params.To(device) : params.Clone();
}

}  // namespace

LeNetReplicas::LeNetReplicas(const nn::LeNetParams& params,
                             const std::vector<nn::Device>& devices,
                             const nn::ReplicaGroupOptions& group_options,
                             const LeNetUpdate& update, int micro_shards)
    : group_(devices, WithHostComms(group_options, micro_shards > 0)),
      update_(update),
      micro_shards_(micro_shards),
      replicas_(devices.size()) {
  if (!(update.clip_grad_norm >= 0)) {
    throw std::invalid_argument("lenet: clip_grad_norm must be 0 or more");
  }
  if (micro_shards != 0) {
    nn::CheckMicroShards(micro_shards, group_.ranks(), "lenet");
  }
  nn::MakeOptimizer(update.optimizer, {}, {});  // Checks the options here.
  nn::CheckGradWire(update.grad_dtype);
  // get_params: each device's copy is made on its own thread.
  group_.Run([&](int d) {
    Replica& r = replicas_[d];
    r.params = CopyTo(params, group_.devices()[d]);
    r.optimizer = nn::MakeOptimizer(update.optimizer, r.params.All(),
                                    nn::LeNetParams::Names());
    if (micro_shards > 0) {
      r.micro_grads = std::make_unique<nn::ReproducibleGradients>(
          update.grad_dtype, group_.devices()[d]);
    }
  });
}

void LeNetReplicas::SetLearningRate(double lr) {
  update_.optimizer.lr = static_cast<float>(lr);
  for (Replica& r : replicas_) r.optimizer->set_lr(update_.optimizer.lr);
}

nn::TrainStepStats LeNetReplicas::TrainStep(
    const std::vector<nn::Shard>& shards) {
  return QueueStep(shards).Finish();
}

nn::PendingStep LeNetReplicas::QueueStep(
    const std::vector<nn::Shard>& all_shards) {
  return QueueAccumulatedStep(std::vector<std::vector<nn::Shard>>{all_shards});
}

nn::PendingStep LeNetReplicas::QueueAccumulatedStep(
    const std::vector<std::vector<nn::Shard>>& micro_batches) {
  if (micro_shards_ > 0) return QueueReproducibleStep(micro_batches);
  int64_t total = 0;
  const std::vector<std::vector<nn::Shard>> local =
      nn::LocalMicroBatches(group_, micro_batches, "lenet", &total);
  // On GPUs the host queues the whole step, the update included, and
  // waits for none of it: the loss and the gradient check are read when
  // the step is finished (PendingStep), and a non-finite gradient skips
  // the update on the device. The same skeleton as DataParallel's step;
  // the chapter's own parts (forward, backward, allreduce, sgd) are here.
  return nn::QueueReplicaSteps(group_, [&](int d, nn::QueuedReplicaStep& q) {
    Replica& r = replicas_[d];
    const nn::Device device = q.device;
    const std::vector<nn::Tensor*> params = r.params.All();
    // A device without samples adds zeros to the sum; micro-batches add
    // their gradients up before the one allreduce.
    nn::LeNetParams grads;
    for (const std::vector<nn::Shard>& shards : local) {
      const nn::Shard& shard = shards[d];
      q.samples += shard.count;
      if (shard.count == 0) continue;
      nn::LeNetActivations acts;
      const nn::Tensor logits =
          nn::LeNetForward(r.params, nn::ShardInputs(shard, device), &acts);
      q.losses.push_back(nn::StartSoftmaxCrossEntropy(
          logits, nn::ClassIds(shard, "lenet"), nn::Reduction::kSum));
      nn::LeNetParams micro =
          nn::LeNetBackward(r.params, acts, q.losses.back().dlogits());
      if (q.losses.size() == 1) {
        grads = std::move(micro);
      } else {
        const std::vector<nn::Tensor*> sum = grads.All(), add = micro.All();
        for (size_t t = 0; t < sum.size(); ++t)
          nn::AddInPlace(*sum[t], *add[t]);
      }
    }
    if (q.losses.empty()) grads = CopyTo(nn::LeNetParams::Zeros(), device);
    // allreduce: every gradient in one flat buffer on the device. Alone in
    // the job (one rank) the gradients are the sums already: no packing,
    // no collective, no host wait for either.
    const std::vector<nn::Tensor*> g = grads.All();
    const bool alone = group_.comm(d).size() == 1;
    nn::FlatTensors flat;
    if (!alone) {
      flat = nn::FlatTensors(g);
      flat.PackForCollective();
      const auto start = std::chrono::steady_clock::now();
      // In float32, or cast once to bfloat16 and back (GradWire); the
      // collective reads the buffer at once.
      nn::GradWire wire(update_.grad_dtype, flat.flat());
      wire.Prepare(flat.packed(), /*host_wait=*/true);
      group_.comm(d).AllReduce(wire.data(), wire.data(), wire.count(),
                               wire.type(), collectives::ReduceOp::kSum);
      wire.Finish();
      q.comm_seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      // The chapter's allreduce follows the whole backward: none hidden.
      q.exposed_comm_seconds = q.comm_seconds;
      flat.Unpack();  // g now holds the summed gradients.
    }
    // sgd(params, lr, batch_size): the update takes the sums' mean.
    static const std::vector<std::string> kNames = nn::LeNetParams::Names();
    nn::SummedGradients summed;
    summed.grads = g;
    summed.names = &kNames;
    summed.samples = total;
    nn::QueueGuardedUpdate(summed, update_.clip_grad_norm, *r.optimizer, &q);
  });
}

nn::PendingStep LeNetReplicas::QueueReproducibleStep(
    const std::vector<std::vector<nn::Shard>>& micro_batches) {
  const int m = micro_shards_;
  const int64_t total = nn::CheckMicroBatches(
      micro_batches, m, "lenet", nullptr,
      nn::ShardsOfRanks(m, group_.first_rank(), group_.size(), group_.ranks()));
  nn::PendingStep step =
      nn::QueueReplicaSteps(group_, [&](int d, nn::QueuedReplicaStep& q) {
        Replica& r = replicas_[d];
        const nn::Device device = q.device;
        // This device's micro-shards, each forward and backward on its own.
        const nn::Range mine =
            nn::ShardsOfRanks(m, group_.first_rank() + d, 1, group_.ranks());
        for (size_t j = 0; j < micro_batches.size(); ++j) {
          for (int64_t i = mine.begin; i < mine.end; ++i) {
            const nn::Shard& shard = micro_batches[j][i];
            q.samples += shard.count;
            if (shard.count == 0) continue;
            nn::LeNetActivations acts;
            const nn::Tensor logits = nn::LeNetForward(
                r.params, nn::ShardInputs(shard, device), &acts);
            q.losses.push_back(nn::StartSoftmaxCrossEntropy(
                logits, nn::ClassIds(shard, "lenet"), nn::Reduction::kSum));
            q.loss_slots.push_back(static_cast<int64_t>(j) * m + i);
            nn::LeNetParams micro =
                nn::LeNetBackward(r.params, acts, q.losses.back().dlogits());
            r.micro_grads->Add(micro.All());
          }
        }
        // allreduce, reproducibly: the micro-shards' gradients summed in an
        // order that does not depend on the devices.
        nn::LeNetParams grads = CopyTo(nn::LeNetParams::Zeros(), device);
        const auto start = std::chrono::steady_clock::now();
        // On GPUs summed where they are (the chapter's device allreduce).
        r.micro_grads->SumInto(
            group_.on_gpus() ? group_.comm(d) : group_.host_comm(d),
            grads.All());
        q.comm_seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
        q.exposed_comm_seconds = q.comm_seconds;
        static const std::vector<std::string> kNames = nn::LeNetParams::Names();
        nn::SummedGradients summed;
        summed.grads = grads.All();
        summed.names = &kNames;
        summed.samples = total;
        nn::QueueGuardedUpdate(summed, update_.clip_grad_norm, *r.optimizer,
                               &q);
      });
  step.AddLossesBySlot(
      static_cast<int64_t>(micro_batches.size()) * m,
      [this](std::vector<double>* v) { group_.SumOverProcesses(v); });
  return step;
}

nn::NamedTensors LeNetReplicas::StateOf(int device) {
  return nn::OnHost(LiveStateOf(device), &replicas_.at(device).host_state);
}

nn::NamedTensors LeNetReplicas::LiveStateOf(int device) {
  const Replica& r = replicas_.at(device);
  nn::NamedTensors state;
  state.names = nn::LeNetParams::Names();
  for (const nn::Tensor* t : r.params.All()) state.tensors.push_back(t);
  for (const auto& [name, tensor] : r.optimizer->State()) {
    state.names.push_back(name);
    state.tensors.push_back(tensor);
  }
  return state;
}

void LeNetReplicas::LoadState(const std::vector<const float*>& values) {
  group_.Run([&](int d) { nn::LoadFromHost(values, LiveStateOf(d), "lenet"); });
}

std::string LeNetReplicas::CompareReplicas() {
  return nn::CompareReplicas(group_, [this](int d) { return StateOf(d); });
}

int64_t LeNetReplicas::CountCorrect(const std::vector<nn::Shard>& all_shards) {
  const std::vector<nn::Shard> shards = group_.LocalShards(all_shards, "lenet");
  std::vector<int64_t> correct(group_.size(), 0);
  group_.Run([&](int d) {
    if (shards[d].count == 0) return;
    nn::LeNetActivations acts;
    const nn::Tensor logits = nn::LeNetForward(
        replicas_[d].params, nn::ShardInputs(shards[d], group_.devices()[d]),
        &acts);
    correct[d] =
        nn::SoftmaxCrossEntropy(logits, nn::ClassIds(shards[d], "lenet"),
                                nn::Reduction::kSum)
            .correct;
  });
  int64_t sum = 0;
  for (int64_t c : correct) sum += c;
  return group_.SumOverProcesses(sum);
}

}  // namespace ringlet::trainers
