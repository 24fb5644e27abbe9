#include "trainers/lenet_replicas.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/ops/elementwise.h"
#include "nn/ops/loss.h"
#include "parallel/bf16_wire.h"
#include "parallel/flat_tensors.h"

namespace ringlet::trainers {
namespace {

// get_params: `params` copied to `device` (CPU devices share the host's
// tensors).
nn::LeNetParams CopyTo(const nn::LeNetParams& params, nn::Device device) {
  return device.is_cuda() ? params.To(device) : params.Clone();
}

// One device's LeNet: its copy of the parameters, the chapter's forward and
// backward, and the softmax cross-entropy summed over the shard
// (reduction='none' then sum). Its gradients are sums; the update divides
// by the batch's size (sgd(params, lr, batch_size)).
class LeNetBody : public parallel::ReplicaBody {
 public:
  LeNetBody(const nn::LeNetParams& params, nn::Device device)
      : params_(CopyTo(params, device)), device_(device) {}

  nn::Tensor Forward(const nn::Tensor& x, bool training) override {
    (void)training;  // LeNet has no layer that trains differently.
    return nn::LeNetForward(params_, x, &acts_);
  }
  nn::PendingLoss Loss(const nn::Tensor& logits,
                       const data::Shard& shard) override {
    std::vector<int32_t> ids;
    return nn::StartSoftmaxCrossEntropy(
        logits, data::ClassIds(shard, "lenet", &ids), nn::Reduction::kSum);
  }
  void Backward(const nn::Tensor& dlogits) override {
    nn::LeNetParams micro = nn::LeNetBackward(params_, acts_, dlogits);
    if (zero_) {
      grads_ = std::move(micro);
      zero_ = false;
      return;
    }
    // Micro-batches add their gradients up before the one allreduce.
    const std::vector<nn::Tensor*> sum = grads_.All(), add = micro.All();
    for (size_t t = 0; t < sum.size(); ++t) nn::AddInPlace(*sum[t], *add[t]);
  }
  void ZeroGrad() override { zero_ = true; }
  parallel::NamedValues Parameters() override {
    return {nn::LeNetParams::Names(), params_.All()};
  }
  std::vector<nn::Tensor*> Gradients() override {
    // A device without samples adds zeros to the sum.
    if (zero_) grads_ = CopyTo(nn::LeNetParams::Zeros(), device_);
    zero_ = false;
    return grads_.All();
  }
  bool GradientsAreSums() const override { return true; }

  const nn::LeNetParams& params() const { return params_; }

 private:
  nn::LeNetParams params_;
  nn::Device device_;
  nn::LeNetActivations acts_;
  nn::LeNetParams grads_;
  bool zero_ = true;  // No backward since ZeroGrad: grads_ are stale.
};

// allreduce: every gradient summed across the devices, in one flat buffer
// on the device, after the whole backward (so none of it is hidden).
class AllReduce : public parallel::GradientReducer {
 public:
  explicit AllReduce(const parallel::ReducerContext& c)
      : comm_(*c.comm), wire_(c.wire) {}

  double Reduce(const std::vector<nn::Tensor*>& grads) override {
    // Alone in the job (one rank) the gradients are the sums already: no
    // packing, no collective, no host wait for either.
    if (comm_.size() == 1) return 0;
    parallel::FlatTensors flat(grads);
    flat.PackForCollective();
    const auto start = std::chrono::steady_clock::now();
    // In float32, or cast once to bfloat16 and back (GradWire); the
    // collective reads the buffer at once.
    parallel::GradWire wire(wire_, flat.flat());
    wire.Prepare(flat.packed(), /*host_wait=*/true);
    comm_.AllReduce(wire.data(), wire.data(), wire.count(), wire.type(),
                    collectives::ReduceOp::kSum);
    wire.Finish();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    flat.Unpack();  // `grads` now hold the sums.
    return seconds;
  }

 private:
  collectives::Communicator& comm_;
  collectives::DataType wire_;
};

parallel::ReplicaEngineOptions EngineOptions(
    const parallel::ReplicaGroupOptions& group_options,
    const LeNetUpdate& update, int micro_shards) {
  parallel::ReplicaEngineOptions options;
  options.group = group_options;
  options.make_optimizer = parallel::OptimizerOf(update.optimizer);
  options.clip_grad_norm = update.clip_grad_norm;
  options.grad_dtype = update.grad_dtype;
  options.micro_shards = micro_shards;
  // Reproducible steps: the engine's ReproducibleReducer.
  if (micro_shards == 0) {
    options.make_reducer = [](const parallel::ReducerContext& c) {
      return std::make_unique<AllReduce>(c);
    };
  }
  options.who = "lenet";
  return options;
}

}  // namespace

LeNetReplicas::LeNetReplicas(const nn::LeNetParams& params,
                             const std::vector<nn::Device>& devices,
                             const parallel::ReplicaGroupOptions& group_options,
                             const LeNetUpdate& update, int micro_shards)
    : engine_(
          [&](int d) {
            return std::make_unique<LeNetBody>(params, devices.at(d));
          },
          devices, EngineOptions(group_options, update, micro_shards)) {}

const nn::LeNetParams& LeNetReplicas::params(int device) {
  return static_cast<LeNetBody&>(engine_.body(device)).params();
}

}  // namespace ringlet::trainers
