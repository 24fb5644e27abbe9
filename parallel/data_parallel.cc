#include "parallel/data_parallel.h"

#include <memory>
#include <stdexcept>
#include <utility>

#include "parallel/bucket_reducer.h"
#include "parallel/module_body.h"

namespace ringlet::parallel {
namespace {

DataParallelOptions WithDefaults(DataParallelOptions options) {
  if (!options.loss) options.loss = SoftmaxCrossEntropyLoss();
  if (!options.make_optimizer) {
    options.make_optimizer = OptimizerOf(options.optimizer);
  }
  // With micro_shards the engine's default, the reproducible reducer.
  if (!options.make_reducer && options.micro_shards == 0) {
    options.make_reducer = BucketedReducer(options.bucket_bytes);
  }
  return options;
}

ReplicaEngineOptions EngineOptions(const DataParallelOptions& options) {
  ReplicaEngineOptions out;
  out.group.backend = options.backend;
  out.group.threads_per_device = options.threads_per_device;
  out.group.compute = options.compute;
  out.group.comm = options.comm;
  out.group.processes = options.processes;
  out.make_optimizer = options.make_optimizer;
  out.clip_grad_norm = options.clip_grad_norm;
  out.grad_dtype = options.grad_dtype;
  out.micro_shards = options.micro_shards;
  out.make_reducer = options.make_reducer;
  out.cross_replica_sums = options.sync_bn;
  out.who = "data parallel";
  return out;
}

}  // namespace

DataParallel::DataParallel(const ModelFactory& make_model,
                           const std::vector<nn::Device>& devices,
                           const DataParallelOptions& options)
    : options_(WithDefaults(options)),
      engine_(
          [&](int d) {
            return std::make_unique<ModuleBody>(make_model(), devices.at(d),
                                                options_.loss);
          },
          devices, EngineOptions(options_)) {}

DataParallel::~DataParallel() = default;

TrainStepStats DataParallel::TrainStep(const data::LocalBatch& batch) {
  return engine_.QueueStep(std::vector<data::LocalBatch>{batch}).Finish();
}

TrainStepStats DataParallel::TrainStep(const std::vector<data::Shard>& shards) {
  return QueueStep(shards).Finish();
}

PendingStep DataParallel::QueueStep(
    const std::vector<data::LocalBatch>& micro_batches) {
  return engine_.QueueStep(micro_batches);
}

PendingStep DataParallel::QueueStep(const std::vector<data::Shard>& shards) {
  return engine_.QueueStep(std::vector<std::vector<data::Shard>>{shards});
}

PendingStep DataParallel::QueueStep(
    const std::vector<std::vector<data::Shard>>& micro_batches) {
  return engine_.QueueStep(micro_batches);
}

EvalStats DataParallel::Evaluate(const data::LocalBatch& batch,
                                 const MetricFunction& metric,
                                 const CountMetric& counts) {
  return engine_.Evaluate(batch, metric, counts);
}

EvalStats DataParallel::Evaluate(const std::vector<data::Shard>& shards,
                                 const MetricFunction& metric,
                                 const CountMetric& counts) {
  return engine_.Evaluate(shards, metric, counts);
}

int64_t DataParallel::CountCorrect(const std::vector<data::Shard>& shards) {
  return engine_.Evaluate(shards).correct;
}

NamedTensors DataParallel::State(int device) { return engine_.State(device); }

void DataParallel::LoadState(const std::vector<const float*>& values) {
  engine_.LoadState(values);
}

std::string DataParallel::CompareReplicas() {
  return engine_.CompareReplicas();
}

nn::Module& DataParallel::replica(int device) {
  return *engine_.body(device).module();
}

}  // namespace ringlet::parallel
