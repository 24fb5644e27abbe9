#include "parallel/data_parallel.h"

#include <array>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

#include "collectives/collectives.h"
#include "nn/layers/containers.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/loss.h"
#include "parallel/flat_tensors.h"
#include "parallel/guarded_update.h"
#include "parallel/micro_shards.h"
#include "parallel/replica_checks.h"

namespace ringlet::nn {
namespace {

using collectives::Communicator;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Copies the first replica's values into every replica, as one message on
// the replicas' device (no host copy on a GPU).
void BroadcastFromFirst(Communicator& comm, FlatTensors& values) {
  values.PackForCollective();
  comm.Broadcast(values.data(), values.data(), values.count(),
                 collectives::DataType::kFloat32, /*root=*/0);
  values.Unpack();
}

}  // namespace

LossFunction SoftmaxCrossEntropyLoss(float label_smoothing) {
  if (label_smoothing == 0) {  // On a GPU, without waiting.
    return [](const Tensor& output, const Shard& shard) {
      return StartSoftmaxCrossEntropy(
          output, ClassIds(shard, "softmax cross-entropy"), Reduction::kSum);
    };
  }
  return [label_smoothing](const Tensor& output, const Shard& shard) {
    return PendingLoss::Ready(
        SoftmaxCrossEntropy(output, ClassIds(shard, "softmax cross-entropy"),
                            Reduction::kSum, label_smoothing));
  };
}

namespace {

// The shard's targets as float32, as many a sample as `output` has.
const float* FloatTargets(const Tensor& output, const Shard& shard,
                          const char* who) {
  const float* targets = shard.targets.As<float>(who);
  const int64_t per_sample = shard.count > 0 ? output.numel() / shard.count : 0;
  if (shard.count > 0 && shard.targets.elements() != per_sample) {
    throw std::invalid_argument(
        std::string(who) + ": the model gives " + std::to_string(per_sample) +
        " values a sample, the targets are " + shard.targets.Describe());
  }
  return targets;
}

}  // namespace

LossFunction MeanSquaredErrorLoss() {
  return [](const Tensor& output, const Shard& shard) {
    return PendingLoss::Ready(MeanSquaredError(
        output, FloatTargets(output, shard, "mean squared error"),
        Reduction::kSum));
  };
}

LossFunction BinaryCrossEntropyWithLogitsLoss() {
  return [](const Tensor& output, const Shard& shard) {
    return PendingLoss::Ready(BinaryCrossEntropyWithLogits(
        output, FloatTargets(output, shard, "binary cross-entropy"),
        Reduction::kSum));
  };
}

struct DataParallel::Replica {
  std::unique_ptr<Module> model;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<BucketReducer> reducer;
  std::vector<Parameter*> params;       // The model's, in its order.
  std::vector<std::string> grad_names;  // The parameters' names.
  std::vector<Tensor*> buffers;
  FlatTensors buffer_flat;  // The buffers, broadcast after every step.
  // Host copies of the state of a replica on a GPU (State()).
  std::vector<Tensor> host_state;
  double bn_comm_seconds = 0;  // Synchronised batch norm, this step.
  // With micro_shards: the micro-shards' gradients and running statistics.
  std::unique_ptr<ReproducibleGradients> micro_grads;
  std::unique_ptr<MicroShardBuffers> micro_buffers;
};

namespace {

ReplicaGroupOptions GroupOptions(const DataParallelOptions& options) {
  ReplicaGroupOptions out;
  out.backend = options.backend;
  out.threads_per_device = options.threads_per_device;
  out.compute = options.compute;
  // Batch norm sums happen on the compute thread while the reducer's thread
  // may be inside a gradient allreduce: they need a group of their own.
  out.comm_groups = options.sync_bn ? 2 : 1;
  // Reproducible steps sum on the host (GPU replicas included).
  out.host_comms = options.micro_shards > 0;
  out.comm = options.comm;
  out.processes = options.processes;
  return out;
}

constexpr int kGradGroup = 0, kBatchNormGroup = 1;

}  // namespace

namespace {

DataParallelOptions WithDefaults(DataParallelOptions options) {
  if (!options.loss) options.loss = SoftmaxCrossEntropyLoss();
  if (!options.make_optimizer) {
    const OptimizerOptions o = options.optimizer;
    MakeOptimizer(o, {}, {});  // Bad options fail here, before any thread.
    options.make_optimizer = [o](std::vector<Tensor*> values,
                                 std::vector<std::string> names) {
      return MakeOptimizer(o, std::move(values), std::move(names));
    };
  }
  if (!(options.clip_grad_norm >= 0)) {
    throw std::invalid_argument(
        "data parallel: clip_grad_norm must be 0 (off) or above");
  }
  if (options.micro_shards < 0) {
    throw std::invalid_argument(
        "data parallel: micro_shards must be 0 (off) or above");
  }
  if (options.micro_shards > 0 && options.sync_bn) {
    throw std::invalid_argument(
        "data parallel: reproducible steps normalise each micro-shard with "
        "its own statistics (ghost batch norm); synchronised batch norm "
        "would sum them in an order that depends on the devices: drop one");
  }
  return options;
}

}  // namespace

DataParallel::DataParallel(const ModelFactory& make_model,
                           const std::vector<Device>& devices,
                           const DataParallelOptions& options)
    : options_(WithDefaults(options)), group_(devices, GroupOptions(options)) {
  const int n = size();
  if (options_.micro_shards > 0) {
    CheckMicroShards(options_.micro_shards, ranks(), "data parallel");
  }
  replicas_.resize(n);
  group_.Run([&](int d) {
    auto r = std::make_unique<Replica>();
    r->model = make_model();
    if (r->model == nullptr) {
      throw std::invalid_argument("data parallel: the model factory gave null");
    }
    const Device device = group_.devices()[d];
    if (device.is_cuda()) r->model->To(device);
    // TrainStep discards the input's gradient.
    r->model->SetInputGradientNeeded(false);
    // Each rank of the job draws its own dropout masks.
    VisitModules(*r->model, [&](Module& m) {
      if (auto* dropout = dynamic_cast<Dropout*>(&m)) {
        dropout->set_replica(group_.first_rank() + d);
      }
    });
    std::vector<Tensor*> values;
    for (Parameter* p : r->model->Parameters()) values.push_back(&p->value);
    for (Buffer* b : r->model->Buffers()) r->buffers.push_back(&b->value);
    values.insert(values.end(), r->buffers.begin(), r->buffers.end());
    FlatTensors everything(values);
    BroadcastFromFirst(group_.comm(d, kGradGroup), everything);
    r->buffer_flat = FlatTensors(r->buffers);
    r->params = r->model->Parameters();
    for (const Parameter* p : r->params) r->grad_names.push_back(p->name);
    std::vector<Tensor*> param_values;
    for (Parameter* p : r->params) param_values.push_back(&p->value);
    r->optimizer = options_.make_optimizer(param_values, r->grad_names);
    if (r->optimizer == nullptr) {
      throw std::invalid_argument(
          "data parallel: the optimizer factory gave null");
    }
    if (options_.sync_bn) {
      Communicator* comm = &group_.comm(d, kBatchNormGroup);
      Replica* raw = r.get();
      // On GPUs `v` is device memory and the communicator's too.
      ReplicaSum sum = [comm, raw](double* v, int64_t count) {
        const Clock::time_point start = Clock::now();
        comm->AllReduce(v, v, count, collectives::DataType::kFloat64,
                        collectives::ReduceOp::kSum);
        raw->bn_comm_seconds += SecondsSince(start);
      };
      VisitModules(*r->model, [&](Module& m) {
        if (auto* bn = dynamic_cast<BatchNorm2d*>(&m)) bn->set_replica_sum(sum);
      });
    }
    if (options_.micro_shards > 0) {
      r->micro_grads = std::make_unique<ReproducibleGradients>(
          options_.grad_dtype, group_.devices()[d]);
      r->micro_buffers = std::make_unique<MicroShardBuffers>(r->buffers);
    }
    r->reducer = std::make_unique<BucketReducer>(
        *r->model, group_.comm(d, kGradGroup), options_.bucket_bytes,
        group_.stream(d), options_.grad_dtype);
    replicas_[d] = std::move(r);
  });
}

DataParallel::~DataParallel() = default;

TrainStepStats DataParallel::TrainStep(const std::vector<Shard>& shards) {
  return QueueStep(shards).Finish();
}

PendingStep DataParallel::QueueStep(const std::vector<Shard>& all_shards) {
  return QueueStep(std::vector<std::vector<Shard>>{all_shards});
}

PendingStep DataParallel::QueueStep(
    const std::vector<std::vector<Shard>>& micro_batches) {
  if (options_.micro_shards > 0) return QueueReproducibleStep(micro_batches);
  int64_t total = 0;
  const std::vector<std::vector<Shard>> local =
      LocalMicroBatches(group_, micro_batches, "data parallel", &total);
  return QueueReplicaSteps(group_, [&](int d, QueuedReplicaStep& q) {
    Replica& r = *replicas_[d];
    const Device device = q.device;
    for (const std::vector<Shard>& shards : local) {
      q.samples += shards[d].count;
    }
    r.bn_comm_seconds = 0;
    r.model->ZeroGrad();
    // The loss is read when the step is finished, not between forward and
    // backward: on a GPU the host keeps queueing.
    try {
      for (size_t j = 0; j < local.size(); ++j) {
        // Gradients are summed across devices after the last micro-batch
        // only: before it the reducer's hooks ignore backward.
        if (j + 1 == local.size()) r.reducer->BeginStep();
        const Shard& shard = local[j][d];
        // With synchronised batch norm an empty shard still takes part in
        // the statistics' sums.
        if (shard.count == 0 && !options_.sync_bn) continue;
        const Tensor output = r.model->Forward(ShardInputs(shard, device));
        q.losses.push_back(options_.loss(output, shard));
        // The mean over the whole step's samples, not over this shard.
        DivideInPlace(q.losses.back().dlogits(), static_cast<float>(total));
        r.model->Backward(q.losses.back().dlogits());
      }
      r.reducer->MarkAllReady();
    } catch (...) {
      group_.Fail(d, std::current_exception());
      r.reducer->Cancel();
      try {
        r.reducer->FinishStep();
      } catch (const std::exception&) {
        // The cause is the exception in flight.
      }
      throw;
    }
    const Clock::time_point backward_done = Clock::now();
    q.comm_seconds = r.reducer->FinishStep() + r.bn_comm_seconds;
    q.exposed_comm_seconds = SecondsSince(backward_done);
    // The gradients are the batch's means already (the loss gradient was
    // divided by every sample of the step).
    SummedGradients summed;
    for (Parameter* p : r.params) summed.grads.push_back(&p->grad);
    summed.names = &r.grad_names;
    if (!QueueGuardedUpdate(summed, options_.clip_grad_norm, *r.optimizer,
                            &q)) {
      return;
    }
    Communicator& comm = group_.comm(d, kGradGroup);
    // Alone in the job (one rank), there is no other copy to align.
    if (!options_.sync_bn && !r.buffers.empty() && comm.size() > 1) {
      const Clock::time_point start = Clock::now();
      BroadcastFromFirst(comm, r.buffer_flat);
      q.comm_seconds += SecondsSince(start);
      q.exposed_comm_seconds += SecondsSince(start);
    }
  });
}

PendingStep DataParallel::QueueReproducibleStep(
    const std::vector<std::vector<Shard>>& micro_batches) {
  const int m = options_.micro_shards;
  std::vector<char> used;  // Slot j * m + i: micro-batch j's micro-shard i.
  const int64_t total =
      CheckMicroBatches(micro_batches, m, "data parallel", &used,
                        ShardsOfRanks(m, group_.first_rank(), size(), ranks()));
  const int64_t slots = static_cast<int64_t>(used.size());
  PendingStep step =
      QueueReplicaSteps(group_, [&](int d, QueuedReplicaStep& q) {
        Replica& r = *replicas_[d];
        const Device device = q.device;
        const Range mine =
            ShardsOfRanks(m, group_.first_rank() + d, 1, ranks());
        std::vector<Tensor*> grads;
        for (Parameter* p : r.params) grads.push_back(&p->grad);
        r.micro_buffers->Begin(slots);
        for (size_t j = 0; j < micro_batches.size(); ++j) {
          for (int64_t i = mine.begin; i < mine.end; ++i) {
            const Shard& shard = micro_batches[j][i];
            q.samples += shard.count;
            if (shard.count == 0) continue;
            const int64_t slot = static_cast<int64_t>(j) * m + i;
            r.model->ZeroGrad();
            const Tensor output = r.model->Forward(ShardInputs(shard, device));
            r.micro_buffers->Record(slot);
            q.losses.push_back(options_.loss(output, shard));
            q.loss_slots.push_back(slot);
            // The mean over the whole step's samples, as without micro-shards.
            DivideInPlace(q.losses.back().dlogits(), static_cast<float>(total));
            r.model->Backward(q.losses.back().dlogits());
            r.micro_grads->Add(grads);
          }
        }
        Communicator& comm = group_.host_comm(d);
        const Clock::time_point start = Clock::now();
        // On GPUs the gradients are summed where they are.
        r.micro_grads->SumInto(
            group_.on_gpus() ? group_.comm(d, kGradGroup) : comm, grads);
        r.micro_buffers->Finish(comm, used);
        q.comm_seconds = SecondsSince(start);
        // After the whole backward: none of it hidden.
        q.exposed_comm_seconds = q.comm_seconds;
        SummedGradients summed;
        summed.grads = grads;
        summed.names = &r.grad_names;
        QueueGuardedUpdate(summed, options_.clip_grad_norm, *r.optimizer, &q);
      });
  step.AddLossesBySlot(
      slots, [this](std::vector<double>* v) { group_.SumOverProcesses(v); });
  return step;
}

EvalStats DataParallel::Evaluate(const std::vector<Shard>& all_shards,
                                 const MetricFunction& metric) {
  const std::vector<Shard> shards =
      group_.LocalShards(all_shards, "data parallel");
  // Per device: loss, correct, metric.
  std::vector<std::array<double, 3>> sums(size(), {0, 0, 0});
  group_.Run([&](int d) {
    Module& model = *replicas_[d]->model;
    if (shards[d].count == 0) return;
    model.SetTraining(false);
    try {
      const Tensor output =
          model.Forward(ShardInputs(shards[d], group_.devices()[d]));
      const LossResult loss = options_.loss(output, shards[d]).Finish();
      sums[d] = {loss.loss, static_cast<double>(loss.correct),
                 metric ? metric(output, shards[d]) : 0.0};
    } catch (...) {
      model.SetTraining(true);
      throw;
    }
    model.SetTraining(true);
  });
  std::vector<double> job(4, 0);
  for (int d = 0; d < size(); ++d) {
    for (int k = 0; k < 3; ++k) job[k] += sums[d][k];
    job[3] += static_cast<double>(shards[d].count);
  }
  group_.SumOverProcesses(&job);
  EvalStats stats;
  stats.loss_sum = job[0];
  stats.correct = static_cast<int64_t>(job[1]);
  stats.metric_sum = job[2];
  stats.samples = static_cast<int64_t>(job[3]);
  return stats;
}

int64_t DataParallel::CountCorrect(const std::vector<Shard>& shards) {
  return Evaluate(shards).correct;
}

NamedTensors DataParallel::LiveState(int device) {
  Replica& r = *replicas_.at(device);
  NamedTensors state;
  for (Parameter* p : r.params) {
    state.names.push_back(p->name);
    state.tensors.push_back(&p->value);
  }
  for (Buffer* b : r.model->Buffers()) {
    state.names.push_back(b->name);
    state.tensors.push_back(&b->value);
  }
  for (const auto& [name, tensor] : r.optimizer->State()) {
    state.names.push_back(name);
    state.tensors.push_back(tensor);
  }
  return state;
}

NamedTensors DataParallel::State(int device) {
  return OnHost(LiveState(device), &replicas_.at(device)->host_state);
}

void DataParallel::LoadState(const std::vector<const float*>& values) {
  group_.Run(
      [&](int d) { LoadFromHost(values, LiveState(d), "data parallel"); });
}

std::string DataParallel::CompareReplicas() {
  return nn::CompareReplicas(group_, [this](int d) { return State(d); });
}

Module& DataParallel::replica(int device) {
  return *replicas_.at(device)->model;
}

int DataParallel::num_buckets() const {
  return replicas_[0]->reducer->num_buckets();
}

void DataParallel::set_lr(float lr) {
  for (auto& r : replicas_) r->optimizer->set_lr(lr);
}

}  // namespace ringlet::nn
