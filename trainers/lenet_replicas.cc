#include "trainers/lenet_replicas.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

#include "nn/ops/elementwise.h"
#include "nn/ops/loss.h"
#include "nn/optim/grad_clip.h"
#include "nn/parallel/flat_tensors.h"
#include "nn/parallel/replica_checks.h"

namespace ringlet::trainers {
namespace {

// `params` copied to `device` (CPU devices share the host's tensors).
nn::LeNetParams CopyTo(const nn::LeNetParams& params, nn::Device device) {
  return device.is_cuda() ? params.To(device) : params.Clone();
}

// "the gradient of W3 became nan": the first parameter whose part of the
// flat gradient `grads` is not finite.
std::string NonFiniteGradient(const float* grads,
                              const std::vector<nn::Tensor*>& params) {
  const std::vector<std::string> names = nn::LeNetParams::Names();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string bad = nn::FirstNonFinite(grads, params[i]->numel());
    if (!bad.empty()) return "the gradient of " + names[i] + " became " + bad;
    grads += params[i]->numel();
  }
  return "";
}

}  // namespace

LeNetReplicas::LeNetReplicas(const nn::LeNetParams& params,
                             const std::vector<nn::Device>& devices,
                             const nn::ReplicaGroupOptions& group_options,
                             const LeNetUpdate& update)
    : group_(devices, group_options),
      update_(update),
      replicas_(devices.size()) {
  const nn::SgdOptions& sgd = update.sgd;
  if (!(sgd.lr > 0)) throw std::invalid_argument("lenet: lr must be positive");
  if (!(sgd.momentum >= 0 && sgd.momentum < 1) ||
      !(sgd.weight_decay >= 0 && sgd.weight_decay < 1)) {
    throw std::invalid_argument(
        "lenet: momentum and weight decay must be in [0, 1)");
  }
  if (!(update.clip_grad_norm >= 0)) {
    throw std::invalid_argument("lenet: clip_grad_norm must be 0 or more");
  }
  // get_params: each device's copy is made on its own thread.
  group_.Run([&](int d) {
    Replica& r = replicas_[d];
    r.params = CopyTo(params, group_.devices()[d]);
    if (sgd.momentum > 0) {
      r.velocity = CopyTo(nn::LeNetParams::Zeros(), group_.devices()[d]);
    }
  });
}

nn::TrainStepStats LeNetReplicas::TrainStep(
    const std::vector<nn::ReplicaInput>& all_shards) {
  const std::vector<nn::ReplicaInput> shards =
      group_.LocalShards(all_shards, "lenet");
  // Every shard of the job counts, including other processes'.
  int64_t total = 0;
  for (const nn::ReplicaInput& s : all_shards) total += s.count;
  if (total == 0) throw std::invalid_argument("lenet: an empty batch");
  group_.Run([&](int d) {
    Replica& r = replicas_[d];
    r.stats = nn::TrainStepStats();
    const nn::Device device = group_.devices()[d];
    const std::vector<nn::Tensor*> params = r.params.All();
    // A device without samples adds zeros to the sum.
    nn::LeNetParams grads;
    // The loss is read after the allreduce, so on a GPU the host queues
    // forward, backward and the packing without waiting.
    nn::PendingLoss loss;
    if (shards[d].count > 0) {
      nn::LeNetActivations acts;
      const nn::Tensor logits = nn::LeNetForward(
          r.params, nn::ShardImages(shards[d], {1, 28, 28}, device), &acts);
      loss = nn::StartSoftmaxCrossEntropy(logits, shards[d].labels,
                                          nn::Reduction::kSum);
      grads = nn::LeNetBackward(r.params, acts, loss.dlogits());
    } else {
      grads = CopyTo(nn::LeNetParams::Zeros(), device);
    }
    // allreduce: every gradient in one flat buffer on the device. Alone in
    // the job (one rank) the gradients are the sums already: no packing,
    // no collective, no host wait for either (with clipping the norm is
    // taken over the flat buffer, as with several ranks).
    const std::vector<nn::Tensor*> g = grads.All();
    const bool alone =
        group_.comm(d).size() == 1 && update_.clip_grad_norm == 0;
    nn::FlatTensors flat;
    if (!alone) {
      flat = nn::FlatTensors(g);
      flat.PackForCollective();
      const auto start = std::chrono::steady_clock::now();
      group_.comm(d).AllReduce(flat.data(), flat.data(), flat.count(),
                               collectives::DataType::kFloat32,
                               collectives::ReduceOp::kSum);
      r.stats.comm_seconds = std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
    }
    const bool bad_gradient =
        nn::CountNonFinite(
            alone ? std::vector<const nn::Tensor*>(g.begin(), g.end())
                  : std::vector<const nn::Tensor*>{&flat.flat()}) > 0;
    if (shards[d].count > 0) {
      nn::RecordLoss(loss.Finish(), shards[d].count, device, &r.stats);
    }
    // The summed gradients are the same on every device, so all skip a
    // non-finite step alike and keep the last finite values.
    if (bad_gradient) {
      if (r.stats.divergence.empty()) {
        nn::FlatTensors named(g);  // The flat layout NonFiniteGradient reads.
        named.PackForCollective();
        const nn::Tensor host = named.flat().To(nn::Device::Cpu());
        r.stats.divergence = NonFiniteGradient(host.data(), params);
      }
      return;
    }
    // The batch mean's norm is the summed gradient's over the batch size
    // (on a GPU the host waits for it once).
    const double clip =
        update_.clip_grad_norm > 0
            ? nn::ClipCoefficient(nn::GlobalNorm({&flat.flat()}) / total,
                                  update_.clip_grad_norm)
            : 1.0;
    if (!alone) flat.Unpack();  // g now holds the summed gradients.
    const nn::SgdOptions& sgd = update_.sgd;
    if (sgd.momentum == 0 && sgd.weight_decay == 0) {
      // sgd(params, lr, batch_size): p -= lr * grad / batch_size.
      nn::SgdOptions step;
      step.lr = static_cast<float>(clip * sgd.lr / static_cast<float>(total));
      for (size_t i = 0; i < params.size(); ++i) {
        nn::SgdUpdate(*params[i], *g[i], nullptr, step);
      }
      return;
    }
    // torch's SGD on the batch-mean gradient.
    const std::vector<nn::Tensor*> velocity =
        sgd.momentum > 0 ? r.velocity.All() : std::vector<nn::Tensor*>();
    for (size_t i = 0; i < params.size(); ++i) {
      nn::DivideInPlace(*g[i], static_cast<float>(total / clip));
      nn::SgdUpdate(*params[i], *g[i], velocity.empty() ? nullptr : velocity[i],
                    sgd);
    }
  });
  nn::TrainStepStats out;
  for (const Replica& r : replicas_) {
    out.loss_sum += r.stats.loss_sum;
    out.correct += r.stats.correct;
    out.samples += r.stats.samples;
    if (out.divergence.empty()) out.divergence = r.stats.divergence;
  }
  out.comm_seconds = replicas_[0].stats.comm_seconds;
  return group_.SumOverProcesses(out);
}

nn::NamedTensors LeNetReplicas::StateOf(int device) {
  return nn::OnHost(LiveStateOf(device), &replicas_.at(device).host_state);
}

nn::NamedTensors LeNetReplicas::LiveStateOf(int device) {
  const Replica& r = replicas_.at(device);
  nn::NamedTensors state;
  state.names = nn::LeNetParams::Names();
  for (const nn::Tensor* t : r.params.All()) state.tensors.push_back(t);
  if (update_.sgd.momentum > 0) {
    for (const std::string& name : nn::LeNetParams::Names()) {
      state.names.push_back(name + ".momentum");
    }
    for (const nn::Tensor* t : r.velocity.All()) state.tensors.push_back(t);
  }
  return state;
}

void LeNetReplicas::LoadState(const std::vector<const float*>& values) {
  group_.Run([&](int d) { nn::LoadFromHost(values, LiveStateOf(d), "lenet"); });
}

std::string LeNetReplicas::CompareReplicas() {
  return nn::CompareReplicas(group_, [this](int d) { return StateOf(d); });
}

int64_t LeNetReplicas::CountCorrect(
    const std::vector<nn::ReplicaInput>& all_shards) {
  const std::vector<nn::ReplicaInput> shards =
      group_.LocalShards(all_shards, "lenet");
  std::vector<int64_t> correct(group_.size(), 0);
  group_.Run([&](int d) {
    if (shards[d].count == 0) return;
    nn::LeNetActivations acts;
    const nn::Tensor logits = nn::LeNetForward(
        replicas_[d].params,
        nn::ShardImages(shards[d], {1, 28, 28}, group_.devices()[d]), &acts);
    correct[d] =
        nn::SoftmaxCrossEntropy(logits, shards[d].labels, nn::Reduction::kSum)
            .correct;
  });
  int64_t sum = 0;
  for (int64_t c : correct) sum += c;
  return group_.SumOverProcesses(sum);
}

}  // namespace ringlet::trainers
