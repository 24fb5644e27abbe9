// The replicated-step engine: the one training step every data-parallel
// model here takes, DataParallel's (a Module and a loss) and the
// from-scratch chapter's (LeNet's functions) alike. It owns the replicas,
// one per device, each on its own thread (ReplicaGroup); the first
// replica's parameters and buffers broadcast to the others; the queued
// step (PendingStep); the guarded update (GuardedUpdate); evaluation;
// state, loading and the replicas' comparison; the learning rate.
//
// Two plug points:
//   the step body (ReplicaBody)           forward, loss and backward of
//                                         one replica on its shards;
//   the gradient reducer (GradientReducer) how the replicas' gradients
//                                         become the job's sums.
//
// Shards: a batch arrives as this process's shards (data::LocalBatch, as
// the loader yields them with TrainLayout()) of shards_per_batch(): one per
// rank of the job, or with micro_shards a fixed number of micro-shards, of
// which rank r runs ShardsOfRanks(micro_shards, r, 1, ranks), one at a
// time. Nothing here re-cuts a batch. A
// reproducible step is micro-shards plus ReproducibleReducer (the default
// reducer with micro_shards): the same parameters, bit for bit, on any
// number of devices and processes (parallel/micro_shards.h).
//
// Layers meet their replica through Module::SetReplicaContext: each
// replica's index in the job and, with cross_replica_sums, a sum across
// replicas on a communicator of its own (synchronised batch norm).
#ifndef RINGLET_PARALLEL_REPLICA_ENGINE_H_
#define RINGLET_PARALLEL_REPLICA_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/shard.h"
#include "nn/device.h"
#include "nn/layers/module.h"
#include "nn/optim/optimizer.h"
#include "parallel/gradient_reducer.h"
#include "parallel/pending_step.h"
#include "parallel/replica_body.h"
#include "parallel/replica_checks.h"
#include "parallel/replica_group.h"

namespace ringlet::parallel {

// A metric of the caller's over one shard in evaluation: `output` is the
// model's output for the shard's samples; returns the metric SUMMED over
// them (e.g. absolute errors). Called on the replica's thread.
using MetricFunction =
    std::function<double(const nn::Tensor& output, const data::Shard& shard)>;

// Counts of the caller's over one shard in evaluation (a confusion
// matrix's cells, per-class errors: parallel/confusion.h): `add` adds the
// shard's into `size` values, which the engine sums over every device and
// process of the job. Called on the replica's thread.
struct CountMetric {
  int64_t size = 0;
  std::function<void(const nn::Tensor& output, const data::Shard& shard,
                     double* counts)>
      add;
};

struct EvalStats {
  double loss_sum = 0;    // The body's loss, summed over the samples.
  int64_t correct = 0;    // Its counts of correct predictions.
  double metric_sum = 0;  // The metric's, when one was given.
  int64_t samples = 0;
  std::vector<double> counts;  // The CountMetric's sums, when one was given.
};

// An optimizer of `values` (a replica's parameters, on its device), named
// `names`. Called once per replica, on its thread.
using OptimizerFactory = std::function<std::unique_ptr<nn::Optimizer>(
    std::vector<nn::Tensor*> values, std::vector<std::string> names)>;
// MakeOptimizer(options) as a factory; bad options throw here, at once.
OptimizerFactory OptimizerOf(const nn::OptimizerOptions& options);

// Builds device `device`'s body (this process's index), on its thread; the
// values may be anything of the right shapes (the first replica's are
// broadcast).
using BodyFactory = std::function<std::unique_ptr<ReplicaBody>(int device)>;

struct ReplicaEngineOptions {
  // Devices' backend, threads, compute options, communicator options and
  // the job's processes (comm_groups and host_comms are the engine's).
  ReplicaGroupOptions group;
  OptimizerFactory make_optimizer;  // Required.
  // Above 0: the batch's mean gradient is clipped to this global L2 norm
  // before the optimizer's step (torch.nn.utils.clip_grad_norm_).
  double clip_grad_norm = 0;
  // The gradients' type on the wire: float32, or bfloat16 (half the
  // bytes; cast once, summed, cast back: DDP's bf16_compress_hook).
  collectives::DataType grad_dtype = collectives::DataType::kFloat32;
  // Above 0: each batch arrives as this many micro-shards (see the file
  // comment); needs one per rank of the job at least, 4096 at most.
  int micro_shards = 0;
  // Each replica's reducer; null: ReproducibleReducer with micro_shards,
  // else std::invalid_argument.
  ReducerFactory make_reducer;
  // Layers get a cross-replica sum in their ReplicaContext (synchronised
  // batch norm); every replica then runs even an empty shard, and the
  // buffers, summed alike, are not broadcast after the step.
  bool cross_replica_sums = false;
  // Starts every error message ("data parallel", "lenet").
  std::string who = "data parallel";
};

class ReplicaEngine {
 public:
  // Builds every replica (BodyFactory, the optimizer, the reducer), each
  // on its device's thread, and broadcasts the first one's parameters and
  // buffers. Throws DeviceError for a device this build cannot run on,
  // std::invalid_argument for bad options, CollectiveError when the
  // backend cannot run here.
  ReplicaEngine(const BodyFactory& make_body,
                const std::vector<nn::Device>& devices,
                const ReplicaEngineOptions& options);
  ~ReplicaEngine();

  // The layouts of the batches it takes, for the loader
  // (data::LoaderOptions::layout): a training batch in
  // shards_per_batch() shards, an evaluation batch in one per rank; this
  // process's ranks' shards local.
  data::ShardLayout TrainLayout() const;
  data::ShardLayout EvalLayout() const;

  // One optimizer step over `micro_batches` (one batch, or several whose
  // gradients add up before the one sum: gradient accumulation), each this
  // process's shards of TrainLayout() (std::invalid_argument, saying what
  // differs, for another layout or cut). The loss is the mean over every
  // sample of the step. On GPUs the host returns once every device's work
  // is queued; the statistics come from the result's Finish(). Finish each
  // step before the next Evaluate, State or LoadState. A failure on any
  // device is rethrown after every device has stopped.
  PendingStep QueueStep(const std::vector<data::LocalBatch>& micro_batches);
  // The same, each batch given whole: all shards_per_batch() shards of the
  // job (other processes' may carry their counts alone).
  PendingStep QueueStep(
      const std::vector<std::vector<data::Shard>>& micro_batches);
  // A batch of EvalLayout() in evaluation mode, summed over the job: the
  // body's losses and correct predictions and, when given, `metric`'s and
  // `counts`'.
  EvalStats Evaluate(const data::LocalBatch& batch,
                     const MetricFunction& metric = nullptr,
                     const CountMetric& counts = {});
  // The same, the batch given whole: one shard per rank of the job.
  EvalStats Evaluate(const std::vector<data::Shard>& shards,
                     const MetricFunction& metric = nullptr,
                     const CountMetric& counts = {});
  // The model's outputs for a batch of EvalLayout() in evaluation mode
  // (predictions): one float32 host tensor per local shard, in order, each
  // [count, output...] (empty for a shard without samples). Local: nothing
  // is exchanged between processes, each gets its own shards'.
  std::vector<nn::Tensor> Outputs(const data::LocalBatch& batch);
  // Steps queued, and finished (their PendingStep's Finish), so far.
  int64_t steps_queued() const { return steps_queued_; }
  int64_t steps_finished() const { return *steps_finished_; }

  // Every tensor training changes on local device `device`, named:
  // parameters, buffers, then the optimizer's state. Always host memory:
  // for a replica on a GPU, copies valid until the next State() call for
  // that device.
  NamedTensors State(int device);
  // Copies `values` (host memory, in State()'s order and sizes) into every
  // local replica. Throws std::invalid_argument for a wrong count.
  void LoadState(const std::vector<const float*>& values);
  // "" when every replica of the job holds the same state, else which one
  // differs and where. Collective over the job.
  std::string CompareReplicas();

  void set_lr(float lr);
  // Shards a training batch is cut into: the micro-shards, or one per rank.
  int shards_per_batch() const;
  int micro_shards() const { return options_.micro_shards; }
  int num_buckets() const;
  ReplicaGroup& group() { return group_; }
  const ReplicaGroup& group() const { return group_; }
  int size() const { return group_.size(); }    // This process's devices.
  int ranks() const { return group_.ranks(); }  // Devices of the whole job.
  ReplicaBody& body(int device);

 private:
  struct Replica;

  NamedTensors LiveState(int device);
  // Device d's part of a step: its shards' forward and backward, the sum,
  // the update.
  void StepReplica(int d, const std::vector<data::LocalBatch>& micro_batches,
                   int64_t total, const StepPlan& plan, QueuedReplicaStep& q);

  ReplicaEngineOptions options_;
  ReplicaGroup group_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  int64_t steps_queued_ = 0;
  // Counted by the steps' Finish, which may outlive a moved engine.
  std::shared_ptr<int64_t> steps_finished_ = std::make_shared<int64_t>(0);
};

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_REPLICA_ENGINE_H_
