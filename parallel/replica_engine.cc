#include "parallel/replica_engine.h"

#include <array>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

#include "nn/ops/autocast.h"
#include "nn/ops/elementwise.h"
#include "parallel/bf16_wire.h"
#include "parallel/flat_tensors.h"
#include "parallel/guarded_update.h"
#include "parallel/micro_shards.h"
#include "parallel/reproducible_reducer.h"

namespace ringlet::parallel {
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

// Gradients on one communicator group; layers' cross-replica sums on
// another, since a bucketed reducer may be inside a gradient call while
// backward (and batch norm's sums) still runs.
constexpr int kGradGroup = 0, kLayerGroup = 1;

ReplicaEngineOptions Checked(ReplicaEngineOptions options) {
  if (!options.make_optimizer) {
    throw std::invalid_argument(options.who + ": no optimizer factory");
  }
  if (!(options.clip_grad_norm >= 0)) {
    throw std::invalid_argument(options.who +
                                ": clip_grad_norm must be 0 (off) or above");
  }
  if (options.micro_shards < 0) {
    throw std::invalid_argument(options.who +
                                ": micro_shards must be 0 (off) or above");
  }
  if (options.micro_shards > 0 && options.cross_replica_sums) {
    throw std::invalid_argument(
        options.who +
        ": reproducible steps normalise each micro-shard with its own "
        "statistics (ghost batch norm); synchronised batch norm would sum "
        "them in an order that depends on the devices: drop one");
  }
  CheckGradWire(options.grad_dtype);
  if (!options.make_reducer) {
    if (options.micro_shards == 0) {
      throw std::invalid_argument(options.who + ": no gradient reducer");
    }
    options.make_reducer = ReproducibleReducer::Factory();
  }
  options.group.comm_groups = options.cross_replica_sums ? 2 : 1;
  // Reproducible steps keep the buffers' sums on the host.
  options.group.host_comms = options.micro_shards > 0;
  return options;
}

}  // namespace

OptimizerFactory OptimizerOf(const nn::OptimizerOptions& options) {
  nn::MakeOptimizer(options, {},
                    {});  // Bad options fail here, before a thread.
  return [options](std::vector<nn::Tensor*> values,
                   std::vector<std::string> names) {
    return nn::MakeOptimizer(options, std::move(values), std::move(names));
  };
}

struct ReplicaEngine::Replica {
  std::unique_ptr<ReplicaBody> body;
  std::unique_ptr<nn::Optimizer> optimizer;
  std::unique_ptr<GradientReducer> reducer;
  std::vector<std::string> param_names;  // Outlive every step (PendingStep).
  std::vector<nn::Tensor*> buffers;
  FlatTensors buffer_flat;  // The buffers, broadcast after every step.
  std::vector<nn::Tensor> host_state;  // State()'s copies on a GPU.
  double layer_sum_seconds = 0;        // Cross-replica sums, this step.
};

ReplicaEngine::ReplicaEngine(const BodyFactory& make_body,
                             const std::vector<nn::Device>& devices,
                             const ReplicaEngineOptions& options)
    : options_(Checked(options)), group_(devices, options_.group) {
  const char* who = options_.who.c_str();
  if (options_.micro_shards > 0) {
    CheckMicroShards(options_.micro_shards, ranks(), who);
  }
  replicas_.resize(size());
  group_.Run([&](int d) {
    auto r = std::make_unique<Replica>();
    r->body = make_body(d);
    if (r->body == nullptr) {
      throw std::invalid_argument(options_.who +
                                  ": the model factory gave null");
    }
    if (nn::Module* module = r->body->module()) {
      nn::ReplicaContext context;
      context.index = group_.first_rank() + d;
      context.count = ranks();
      if (options_.cross_replica_sums) {
        Communicator* comm = &group_.comm(d, kLayerGroup);
        Replica* raw = r.get();
        // On GPUs `v` is device memory and the communicator's too.
        context.sum = [comm, raw](double* v, int64_t count) {
          const Clock::time_point start = Clock::now();
          comm->AllReduce(v, v, count, collectives::DataType::kFloat64,
                          collectives::ReduceOp::kSum);
          raw->layer_sum_seconds += SecondsSince(start);
        };
      }
      nn::VisitModules(*module,
                       [&](nn::Module& m) { m.SetReplicaContext(context); });
    }
    NamedValues params = r->body->Parameters();
    r->buffers = r->body->Buffers().tensors;
    std::vector<nn::Tensor*> values = params.tensors;
    values.insert(values.end(), r->buffers.begin(), r->buffers.end());
    FlatTensors everything(values);
    BroadcastFromFirst(group_.comm(d, kGradGroup), everything);
    r->buffer_flat = FlatTensors(r->buffers);
    r->param_names = params.names;
    r->optimizer = options_.make_optimizer(params.tensors, params.names);
    if (r->optimizer == nullptr) {
      throw std::invalid_argument(options_.who +
                                  ": the optimizer factory gave null");
    }
    ReducerContext context;
    context.device = d;
    context.where = group_.devices()[d];
    context.body = r->body.get();
    context.comm = &group_.comm(d, kGradGroup);
    if (!group_.on_gpus() || options_.group.host_comms) {
      context.host_comm = &group_.host_comm(d);
    }
    context.stream = group_.stream(d);
    context.wire = options_.grad_dtype;
    r->reducer = options_.make_reducer(context);
    if (r->reducer == nullptr) {
      throw std::invalid_argument(options_.who +
                                  ": the reducer factory gave null");
    }
    replicas_[d] = std::move(r);
  });
}

ReplicaEngine::~ReplicaEngine() = default;

int ReplicaEngine::shards_per_batch() const {
  return options_.micro_shards > 0 ? options_.micro_shards : ranks();
}

data::ShardLayout ReplicaEngine::TrainLayout() const {
  return data::ShardLayout::OfRanks(shards_per_batch(), group_.first_rank(),
                                    size(), ranks());
}

data::ShardLayout ReplicaEngine::EvalLayout() const {
  return data::ShardLayout::OfRanks(ranks(), group_.first_rank(), size(),
                                    ranks());
}

PendingStep ReplicaEngine::QueueStep(
    const std::vector<std::vector<data::Shard>>& micro_batches) {
  std::vector<data::LocalBatch> local;
  for (const std::vector<data::Shard>& shards : micro_batches) {
    local.push_back(data::LocalOf(shards, TrainLayout(), options_.who.c_str()));
  }
  return QueueStep(local);
}

PendingStep ReplicaEngine::QueueStep(
    const std::vector<data::LocalBatch>& micro_batches) {
  const char* who = options_.who.c_str();
  const data::ShardLayout layout = TrainLayout();
  const int m = options_.micro_shards;
  int64_t total = 0;
  // Slot j * m + i: whether micro-batch j's micro-shard i has samples on
  // some rank (the same everywhere: the cut follows from the size).
  std::vector<char> used;
  for (const data::LocalBatch& batch : micro_batches) {
    data::CheckLocalBatch(batch, layout, who);
    total += batch.size;
    for (int i = 0; i < m; ++i) {
      const data::Range r = data::SamplesOfShards(batch.size, m, i, i + 1);
      used.push_back(r.end > r.begin);
    }
  }
  if (total == 0) {
    throw std::invalid_argument(options_.who +
                                ": a training step needs samples");
  }
  StepPlan plan;
  if (m > 0) {
    plan.slots = static_cast<int64_t>(used.size());
    plan.used = &used;
  }
  ++steps_queued_;
  PendingStep step = QueueReplicaSteps(
      group_,
      [&](int d, QueuedReplicaStep& q) {
        StepReplica(d, micro_batches, total, plan, q);
      },
      [finished = steps_finished_] { ++*finished; });
  if (m > 0) {
    step.AddLossesBySlot(plan.slots, [this](std::vector<double>* v) {
      group_.SumOverProcesses(v);
    });
  }
  return step;
}

void ReplicaEngine::StepReplica(
    int d, const std::vector<data::LocalBatch>& micro_batches, int64_t total,
    const StepPlan& plan, QueuedReplicaStep& q) {
  Replica& r = *replicas_[d];
  ReplicaBody& body = *r.body;
  GradientReducer& reducer = *r.reducer;
  const int m = options_.micro_shards;
  const bool apart = reducer.KeepsShardsApart();
  const bool sums = body.GradientsAreSums();
  // This replica's shards of every micro-batch: its rank's one, or its
  // micro-shards; a batch holds this process's from `local` on.
  const data::Range mine = data::ShardsOfRanks(
      shards_per_batch(), group_.first_rank() + d, 1, ranks());
  const int64_t local = TrainLayout().local.begin;
  r.layer_sum_seconds = 0;
  if (!apart) body.ZeroGrad();
  reducer.BeginStep(plan);
  try {
    for (size_t j = 0; j < micro_batches.size(); ++j) {
      if (j + 1 == micro_batches.size()) reducer.BeginLastMicroBatch();
      for (int64_t i = mine.begin; i < mine.end; ++i) {
        const data::Shard& shard = micro_batches[j].shards[i - local];
        q.samples += shard.count;
        // Layers summing across replicas need every replica's forward.
        if (shard.count == 0 && !options_.cross_replica_sums) continue;
        const int64_t slot = m > 0 ? static_cast<int64_t>(j) * m + i : -1;
        if (apart) body.ZeroGrad();
        const nn::Tensor output =
            body.Forward(ShardInputs(shard, q.device), /*training=*/true);
        // Read when the step is finished: on a GPU the host keeps queueing.
        q.losses.push_back(body.Loss(output, shard));
        if (m > 0) q.loss_slots.push_back(slot);
        // The mean over the whole step's samples, not over this shard.
        if (!sums) {
          nn::DivideInPlace(q.losses.back().dlogits(),
                            static_cast<float>(total));
        }
        body.Backward(q.losses.back().dlogits());
        if (apart) reducer.AfterShard(slot, body.Gradients());
      }
    }
    reducer.AllReady();
  } catch (...) {
    group_.Fail(d, std::current_exception());
    reducer.Cancel();
    throw;
  }
  const std::vector<nn::Tensor*> grads = body.Gradients();
  const Clock::time_point backward_done = Clock::now();
  q.comm_seconds = reducer.Reduce(grads) + r.layer_sum_seconds;
  q.exposed_comm_seconds = SecondsSince(backward_done);
  SummedGradients summed;
  summed.grads = grads;
  summed.names = &r.param_names;
  summed.samples = sums ? total : 1;
  if (!QueueGuardedUpdate(summed, options_.clip_grad_norm, *r.optimizer, &q)) {
    return;
  }
  Communicator& comm = group_.comm(d, kGradGroup);
  // Alone in the job (one rank), there is no other copy to align.
  if (!reducer.SyncsBuffers() && !options_.cross_replica_sums &&
      !r.buffers.empty() && comm.size() > 1) {
    const Clock::time_point start = Clock::now();
    BroadcastFromFirst(comm, r.buffer_flat);
    q.comm_seconds += SecondsSince(start);
    q.exposed_comm_seconds += SecondsSince(start);
  }
}

EvalStats ReplicaEngine::Evaluate(const std::vector<data::Shard>& shards,
                                  const MetricFunction& metric,
                                  const CountMetric& counts) {
  return Evaluate(data::LocalOf(shards, EvalLayout(), options_.who.c_str()),
                  metric, counts);
}

EvalStats ReplicaEngine::Evaluate(const data::LocalBatch& batch,
                                  const MetricFunction& metric,
                                  const CountMetric& counts) {
  data::CheckLocalBatch(batch, EvalLayout(), options_.who.c_str());
  if (counts.size < 0 || (counts.size > 0 && !counts.add)) {
    throw std::invalid_argument(options_.who +
                                ": a count metric needs a size >= 0 and an "
                                "add function");
  }
  const std::vector<data::Shard>& shards = batch.shards;
  // Per device: loss, correct, metric, then the counts.
  constexpr int kFixed = 3;
  std::vector<std::vector<double>> sums(
      size(), std::vector<double>(kFixed + counts.size, 0.0));
  group_.Run([&](int d) {
    if (shards[d].count == 0) return;
    ReplicaBody& body = *replicas_[d]->body;
    const nn::Tensor output = body.Forward(
        ShardInputs(shards[d], group_.devices()[d]), /*training=*/false);
    const nn::LossResult loss = body.Loss(output, shards[d]).Finish();
    sums[d][0] = loss.loss;
    sums[d][1] = static_cast<double>(loss.correct);
    sums[d][2] = metric ? metric(output, shards[d]) : 0.0;
    if (counts.size > 0) counts.add(output, shards[d], &sums[d][kFixed]);
  });
  // The job's sums: the per-device ones, then the samples.
  std::vector<double> job(kFixed + counts.size + 1, 0.0);
  for (int d = 0; d < size(); ++d) {
    for (size_t k = 0; k < sums[d].size(); ++k) job[k] += sums[d][k];
    job.back() += static_cast<double>(shards[d].count);
  }
  group_.SumOverProcesses(&job);
  EvalStats stats;
  stats.loss_sum = job[0];
  stats.correct = static_cast<int64_t>(job[1]);
  stats.metric_sum = job[2];
  stats.counts.assign(job.begin() + kFixed, job.end() - 1);
  stats.samples = static_cast<int64_t>(job.back());
  return stats;
}

std::vector<nn::Tensor> ReplicaEngine::Outputs(const data::LocalBatch& batch) {
  data::CheckLocalBatch(batch, EvalLayout(), options_.who.c_str());
  std::vector<nn::Tensor> outputs(size());
  group_.Run([&](int d) {
    if (batch.shards[d].count == 0) return;
    const nn::Tensor output = replicas_[d]->body->Forward(
        ShardInputs(batch.shards[d], group_.devices()[d]), /*training=*/false);
    outputs[d] = nn::AsDType(output, nn::DType::kFloat32)
                     .ToMemoryFormat(nn::MemoryFormat::kContiguous)
                     .To(nn::Device::Cpu());
  });
  return outputs;
}

NamedTensors ReplicaEngine::LiveState(int device) {
  Replica& r = *replicas_.at(device);
  NamedTensors state;
  for (const NamedValues& part : {r.body->Parameters(), r.body->Buffers()}) {
    state.names.insert(state.names.end(), part.names.begin(), part.names.end());
    state.tensors.insert(state.tensors.end(), part.tensors.begin(),
                         part.tensors.end());
  }
  for (const auto& [name, tensor] : r.optimizer->State()) {
    state.names.push_back(name);
    state.tensors.push_back(tensor);
  }
  return state;
}

NamedTensors ReplicaEngine::State(int device) {
  return OnHost(LiveState(device), &replicas_.at(device)->host_state);
}

void ReplicaEngine::LoadState(const std::vector<const float*>& values) {
  group_.Run(
      [&](int d) { LoadFromHost(values, LiveState(d), options_.who.c_str()); });
}

std::string ReplicaEngine::CompareReplicas() {
  return parallel::CompareReplicas(group_, [this](int d) { return State(d); });
}

ReplicaBody& ReplicaEngine::body(int device) {
  return *replicas_.at(device)->body;
}

int ReplicaEngine::num_buckets() const {
  return replicas_[0]->reducer->num_buckets();
}

void ReplicaEngine::set_lr(float lr) {
  for (auto& r : replicas_) r->optimizer->set_lr(lr);
}

}  // namespace ringlet::parallel
