// The gradient reducer: the engine's second plug point (c10d's
// communication hook). Each replica has one; it turns the replica's
// gradients into the job's sums, the same on every replica:
//   BucketReducer         buckets summed while backward runs (DDP's),
//                         float32 or bfloat16 on the wire;
//   ReproducibleReducer   each micro-shard's gradient kept apart and the
//                         lot summed so the bits do not depend on the
//                         devices (--reproducible);
//   the chapter's         one flat allreduce after backward
//                         (trainers/lenet_replicas.cc);
// or a caller's own (ReplicaEngineOptions::make_reducer).
//
// The engine calls, on the replica's thread, for every step:
//   BeginStep, then per micro-batch (BeginLastMicroBatch before the last
//   one's shards) each shard's forward and backward, AfterShard after each
//   when KeepsShardsApart(), then AllReady and Reduce; Cancel instead when
//   the replica failed before Reduce.
#ifndef RINGLET_PARALLEL_GRADIENT_REDUCER_H_
#define RINGLET_PARALLEL_GRADIENT_REDUCER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/api/types.h"
#include "nn/device.h"
#include "nn/device_stream.h"
#include "nn/tensor.h"
#include "parallel/replica_body.h"

namespace ringlet::parallel {

// What the engine knows of a step before it runs.
struct StepPlan {
  // Micro-shard slots of the step (micro-batches x micro-shards; slot
  // j * micro_shards + i), 0 without micro-shards.
  int64_t slots = 0;
  // Per slot: whether some rank of the job has samples for it (the same
  // on every rank). Empty without micro-shards.
  const std::vector<char>* used = nullptr;
};

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;

  // true: the engine zeroes the gradients before every shard and calls
  // AfterShard after its backward, so each shard's gradient stays apart.
  virtual bool KeepsShardsApart() const { return false; }
  // true: the reducer makes the body's buffers agree across the job;
  // false: the engine copies the first replica's to all after each step.
  virtual bool SyncsBuffers() const { return false; }

  virtual void BeginStep(const StepPlan& plan) { (void)plan; }
  // The last micro-batch starts: from here gradients reported are final
  // (earlier micro-batches only add up, as DDP's no_sync).
  virtual void BeginLastMicroBatch() {}
  // Shard `slot` (its micro-shard slot; -1 without) has run its backward;
  // `grads` hold its gradient alone.
  virtual void AfterShard(int64_t slot, const std::vector<nn::Tensor*>& grads) {
    (void)slot;
    (void)grads;
  }
  // Backward is over: every gradient is final (start what is left).
  virtual void AllReady() {}
  // Sets `grads` to the job's sums (what every replica then holds), in
  // place; returns the seconds spent in collective calls. Rethrows the
  // communication's error.
  virtual double Reduce(const std::vector<nn::Tensor*>& grads) = 0;
  // The replica failed before Reduce: stop what was started, throwing
  // nothing (the failure in flight is the cause).
  virtual void Cancel() {}

  // Collective calls per step (buckets), for reports.
  virtual int num_buckets() const { return 1; }
};

// What a replica's reducer is made with (on the replica's thread).
struct ReducerContext {
  int device = 0;  // This process's device index.
  nn::Device where;
  ReplicaBody* body = nullptr;
  // The gradients' communicator (memory on the replica's device), and one
  // of host buffers (the same on CPU devices).
  collectives::Communicator* comm = nullptr;
  collectives::Communicator* host_comm = nullptr;
  nn::DeviceStream stream;
  // The gradients' type on the wire: float32 or bfloat16.
  collectives::DataType wire = collectives::DataType::kFloat32;
};

using ReducerFactory =
    std::function<std::unique_ptr<GradientReducer>(const ReducerContext&)>;

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_GRADIENT_REDUCER_H_
