#include "trainers/lenet_replicas.h"

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "nn/ops/loss.h"
#include "nn/optim/grad_clip.h"
#include "nn/parallel/replica_checks.h"

namespace ringlet::trainers {
namespace {

nn::Tensor ShardImages(const nn::ReplicaInput& shard) {
  nn::Tensor x = nn::Tensor::Uninitialized({shard.count, 1, 28, 28});
  std::memcpy(x.data(), shard.images, x.numel() * sizeof(float));
  return x;
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
    replicas_[d].params = params.Clone();
    if (sgd.momentum > 0) replicas_[d].velocity = nn::LeNetParams::Zeros();
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
    const std::vector<nn::Tensor*> params = r.params.All();
    // A device without samples adds zeros to the sum.
    nn::LeNetParams grads;
    if (shards[d].count > 0) {
      nn::LeNetActivations acts;
      const nn::Tensor logits =
          nn::LeNetForward(r.params, ShardImages(shards[d]), &acts);
      const nn::LossResult loss = nn::SoftmaxCrossEntropy(
          logits, shards[d].labels, nn::Reduction::kSum);
      grads = nn::LeNetBackward(r.params, acts, loss.dlogits);
      const std::string bad_loss = nn::NonFiniteName(loss.loss);
      if (!bad_loss.empty()) {
        r.stats.divergence = "the loss became " + bad_loss + " on " +
                             nn::ToString(group_.devices()[d]);
      }
      r.stats.loss_sum = loss.loss;
      r.stats.correct = loss.correct;
      r.stats.samples = shards[d].count;
    } else {
      grads = nn::LeNetParams::Zeros();
    }
    const std::vector<nn::Tensor*> g = grads.All();
    size_t n = 0;
    for (const nn::Tensor* t : g) n += t->numel();
    r.grads.resize(n);
    float* out = r.grads.data();
    for (const nn::Tensor* t : g) {
      std::memcpy(out, t->data(), t->numel() * sizeof(float));
      out += t->numel();
    }
    const auto start = std::chrono::steady_clock::now();
    group_.comm(d).AllReduce(r.grads.data(), r.grads.data(), n,
                             collectives::DataType::kFloat32,
                             collectives::ReduceOp::kSum);
    r.stats.comm_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    // The summed gradients are the same on every device, so all skip a
    // non-finite step alike and keep the last finite values.
    if (!nn::FirstNonFinite(r.grads.data(), n).empty()) {
      if (r.stats.divergence.empty()) {
        r.stats.divergence = NonFiniteGradient(r.grads.data(), params);
      }
      return;
    }
    // The batch mean's norm is the summed gradient's over the batch size.
    const double clip =
        update_.clip_grad_norm > 0
            ? nn::ClipCoefficient(nn::GlobalNorm(r.grads.data(), n) / total,
                                  update_.clip_grad_norm)
            : 1.0;
    const nn::SgdOptions& sgd = update_.sgd;
    if (sgd.momentum == 0 && sgd.weight_decay == 0) {
      // sgd(params, lr, batch_size): p -= lr * grad / batch_size.
      const float step =
          static_cast<float>(clip * sgd.lr / static_cast<float>(total));
      const float* grad = r.grads.data();
      for (nn::Tensor* p : params) {
        float* v = p->data();
        for (int64_t i = 0; i < p->numel(); ++i) v[i] -= step * grad[i];
        grad += p->numel();
      }
      return;
    }
    // torch's SGD on the batch-mean gradient, unpacked into this device's
    // own gradient tensors (g, packed above).
    const float scale = static_cast<float>(clip / static_cast<double>(total));
    const std::vector<nn::Tensor*> velocity =
        sgd.momentum > 0 ? r.velocity.All() : std::vector<nn::Tensor*>();
    const float* summed = r.grads.data();
    for (size_t i = 0; i < params.size(); ++i) {
      float* mean = g[i]->data();
      for (int64_t j = 0; j < g[i]->numel(); ++j) mean[j] = scale * summed[j];
      summed += g[i]->numel();
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
  group_.Run([&](int d) {
    const nn::NamedTensors state = StateOf(d);
    if (values.size() != state.tensors.size()) {
      throw std::invalid_argument("lenet: " + std::to_string(values.size()) +
                                  " state tensors given for " +
                                  std::to_string(state.tensors.size()));
    }
    for (size_t i = 0; i < values.size(); ++i) {
      nn::Tensor* t = const_cast<nn::Tensor*>(state.tensors[i]);
      std::memcpy(t->data(), values[i], t->numel() * sizeof(float));
    }
  });
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
    const nn::Tensor logits =
        nn::LeNetForward(replicas_[d].params, ShardImages(shards[d]), &acts);
    correct[d] =
        nn::SoftmaxCrossEntropy(logits, shards[d].labels, nn::Reduction::kSum)
            .correct;
  });
  int64_t sum = 0;
  for (int64_t c : correct) sum += c;
  return group_.SumOverProcesses(sum);
}

}  // namespace ringlet::trainers
