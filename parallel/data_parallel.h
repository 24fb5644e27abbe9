// DataParallel, in the manner of torch.nn.parallel.DistributedDataParallel:
// the DDP-shaped front of the replicated-step engine (replica_engine.h)
// with a Module as the step body (ModuleBody) and, by default, a bucketed
// reducer. One replica of any Module per device, parameters and buffers
// broadcast from the first; each batch arrives scattered in shards, one per
// device; forward, the caller's loss and backward run on every device at once
// (a thread each); gradients are summed in buckets while backward still runs
// (BucketReducer: each parameter reports as its backward ends) and every
// replica takes the same guarded optimizer step (GuardedUpdate), so
// replicas stay bitwise identical.
//
// With more than one rank, each parameter's `grad` becomes a view into its
// bucket (DDP's gradient_as_bucket_view): a module's Backward adds into
// `grad` in place, as nn's layers do. One that assigns a new tensor to
// `grad` still gets the sums, at the price of a copy in and out.
//
// Devices: CPU devices (each a thread with its own op threads), or GPUs,
// where a GPU may hold several replicas (`cuda:0,cuda:0`) with the ring and
// naive backends; on GPUs the replicas, the gradient buckets and the SGD
// step stay in device memory, and the host reads back the loss and the
// count of correct predictions once per step.
//
// The loss is the caller's (softmax cross-entropy by default), averaged
// over the whole batch: each device scales its gradient by 1 / (samples in
// the batch), so shards of different sizes, or an empty one, give exactly
// the full batch's gradient.
//
// Batch norm: by default each device normalises with its own shard's
// statistics (the chapter's behaviour) and after each step the first
// replica's running statistics are copied to all (as DDP's
// broadcast_buffers). With sync_bn every device uses the whole batch's
// statistics, summed across devices, and the step equals the one-device step.
#ifndef RINGLET_PARALLEL_DATA_PARALLEL_H_
#define RINGLET_PARALLEL_DATA_PARALLEL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"
#include "nn/compute_options.h"
#include "nn/device.h"
#include "nn/layers/module.h"
#include "nn/optim/optimizer.h"
#include "parallel/gradient_reducer.h"
#include "parallel/losses.h"
#include "parallel/pending_step.h"
#include "parallel/replica_checks.h"
#include "parallel/replica_engine.h"
#include "parallel/replica_group.h"

namespace ringlet::parallel {

struct DataParallelOptions {
  std::string backend = "ring";  // A collectives backend (ring, naive, ...).
  // Null: softmax cross-entropy.
  LossFunction loss;
  // Null: MakeOptimizer(optimizer, ...), the optimizer named by
  // `optimizer` (sgd, adam, adamw, lion); or one's own, e.g. nn::MakeLion
  // with its LionOptions.
  OptimizerFactory make_optimizer;
  nn::OptimizerOptions optimizer;
  // Above 0: the batch's mean gradient is clipped to this global L2 norm
  // before the optimizer's step (torch.nn.utils.clip_grad_norm_; see
  // QueueGuardedUpdate); every replica clips alike.
  double clip_grad_norm = 0;
  bool sync_bn = false;
  int threads_per_device = 1;
  // How each replica computes (precision, layout, algorithms; one per
  // device), bound to its thread: empty, the options of the thread that
  // makes the DataParallel (nn/compute_options.h).
  std::vector<nn::ComputeOptions> compute;
  int64_t bucket_bytes = 4 << 20;
  // The gradients' type on the wire: float32, or bfloat16 on CPU devices
  // (half the bytes; each bucket cast once, summed with one rounding per
  // step, cast back: DDP's bf16_compress_hook).
  collectives::DataType grad_dtype = collectives::DataType::kFloat32;
  // How gradients are summed (DDP's comm hook); null: BucketedReducer of
  // bucket_bytes, or with micro_shards ReproducibleReducer.
  ReducerFactory make_reducer;
  collectives::CommOptions comm;
  // The job's processes under mpirun; null: one process (see ReplicaGroup).
  std::shared_ptr<collectives::ProcessGroup> processes;
  // Above 0: reproducible steps (parallel/micro_shards.h), the same
  // parameters bit for bit on any number of devices and processes: each
  // batch arrives cut into this many micro-shards (not one shard per
  // device), rank r runs ShardsOfRanks(micro_shards, r, 1, ranks) one at a
  // time, batch norm normalises per micro-shard, and the gradients are
  // summed by ReproducibleReducer (no overlap with backward). Needs at least
  // one micro-shard per device of the job; refuses sync_bn. Keep
  // threads_per_device (CPU) or deterministic convolution algorithms (GPU) the
  // same in the runs you compare.
  int micro_shards = 0;
};

class DataParallel {
 public:
  // Builds one replica: called once per device, each on its own thread, and
  // every call must give the same architecture (the values are the first
  // replica's, broadcast).
  using ModelFactory = std::function<std::unique_ptr<nn::Module>()>;

  // Builds a replica on every device (each on its own thread) and broadcasts
  // the first one's parameters and buffers to the others. Throws DeviceError
  // for a device this build of nn cannot run on, std::invalid_argument for
  // bad options, CollectiveError when the backend cannot run here.
  DataParallel(const ModelFactory& make_model,
               const std::vector<nn::Device>& devices,
               const DataParallelOptions& options);
  ~DataParallel();

  // How the batches it takes are cut, for the loader
  // (data::LoaderOptions::layout): training batches in one shard per rank
  // of the job (with micro_shards, that many), evaluation batches in one
  // per rank; this process's ranks' shards are local.
  data::ShardLayout TrainLayout() const { return engine_.TrainLayout(); }
  data::ShardLayout EvalLayout() const { return engine_.EvalLayout(); }

  // One optimizer step on a batch given as this process's shards of
  // TrainLayout() (what data::Batch::Local() gives); returns the job's
  // statistics. A failure on any device (bad labels, a collective error)
  // is rethrown here after every device has stopped.
  TrainStepStats TrainStep(const data::LocalBatch& batch);
  // The same, the batch given whole: shards[r] is rank r's shard (in one
  // process, rank r is device r; with micro_shards, the batch's
  // micro-shards in order instead).
  TrainStepStats TrainStep(const std::vector<data::Shard>& shards);
  // One optimizer step over several micro-batches (gradient accumulation,
  // DDP's no_sync): each micro-batch's forward and backward add to the
  // gradients, which are summed across devices once, after the last; the
  // loss is the mean over every sample of every micro-batch. Without batch
  // norm, k micro-batches of b samples take the step of one batch of k b.
  // Queued: on GPUs the host returns once every device's work (the update
  // included) is queued, without waiting for it; the statistics come from
  // the result's Finish(). A non-finite gradient sum skips the update on
  // the device. Finish each step before the next Evaluate, State or
  // LoadState (they wait for the devices anyway).
  PendingStep QueueStep(const std::vector<data::LocalBatch>& micro_batches);
  // The same, each micro-batch given whole, as TrainStep's `shards`.
  PendingStep QueueStep(
      const std::vector<std::vector<data::Shard>>& micro_batches);
  PendingStep QueueStep(const std::vector<data::Shard>& shards);

  // The batch in evaluation mode (running statistics), every device
  // evaluating its shard at once, summed over the job: the loss function's
  // losses and counts of correct predictions and, when given, `metric`'s
  // values (each the sum over its shard's samples: a metric of your own)
  // and `counts`' (a confusion matrix: parallel/confusion.h).
  // This process's shards of EvalLayout(), or the batch whole (one shard
  // per rank).
  EvalStats Evaluate(const data::LocalBatch& batch,
                     const MetricFunction& metric = nullptr,
                     const CountMetric& counts = {});
  EvalStats Evaluate(const std::vector<data::Shard>& shards,
                     const MetricFunction& metric = nullptr,
                     const CountMetric& counts = {});
  // Evaluate's count of correct predictions (the accuracy's numerator).
  int64_t CountCorrect(const std::vector<data::Shard>& shards);

  // Every tensor training changes on local device `device`, named:
  // parameters, batch-norm statistics, then the optimizer's state (momentum
  // buffers, or Adam's moments and step; see Optimizer::State). What a
  // checkpoint saves. Always host memory: for a replica on a GPU, copies
  // valid until the next State() call for that device.
  NamedTensors State(int device);
  // Copies `values` (host memory, in State()'s order and sizes) into every
  // local replica. Throws std::invalid_argument for a wrong count.
  void LoadState(const std::vector<const float*>& values);
  // "" when every replica of the job holds the same state, else which one
  // differs and where (see CompareReplicas). Collective over the job.
  std::string CompareReplicas();

  void set_lr(float lr) { engine_.set_lr(lr); }
  const ReplicaGroup& group() const { return engine_.group(); }
  // Collective calls per step (gradient buckets).
  int num_buckets() const { return engine_.num_buckets(); }
  int micro_shards() const { return options_.micro_shards; }
  int size() const { return engine_.size(); }    // This process's devices.
  int ranks() const { return engine_.ranks(); }  // Devices of the whole job.
  const std::vector<nn::Device>& devices() const { return group().devices(); }
  nn::Module& replica(int device);
  // The engine underneath, as the training loop drives it.
  ReplicaEngine& engine() { return engine_; }

 private:
  DataParallelOptions options_;
  ReplicaEngine engine_;
};

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_DATA_PARALLEL_H_
