// Gradient buckets reduced while backward is still running, as PyTorch's
// DistributedDataParallel does: parameters are grouped, in the order
// backward finishes them, into buckets of about `bucket_bytes`; each
// parameter's hook (Parameter::on_grad_ready) counts it final, and the
// last one of a bucket starts the bucket's allreduce (sum), asynchronously,
// from the compute thread, which goes on with the earlier layers and waits
// for the step's calls once, at its end. Buckets start strictly in order,
// so every replica makes the same sequence of collective calls.
//
// Each bucket is one flat buffer on the replica's device, and the
// gradients are views into it (FlatTensors::kViews): the allreduce sums
// the gradients themselves, with no copies in or out. What the reducer
// queues on the device goes on the replica's stream, ordered with its
// kernels:
//   a communicator that orders calls on the device (NCCL): each call is
//     queued after an event marking the end of the bucket's backward, and
//     the stream waits for the calls' events before the optimizer's step;
//     the host waits once per step (which keeps the timeout on a missing
//     peer).
//   the others read the buffer on the host: ring and naive run the call on
//     the communicator's own thread, which waits for the bucket's backward
//     on the device first (CallOptions::before); MPI starts it at once.
//
// With `wire` bfloat16, each bucket is cast to bfloat16 once (on a GPU a
// kernel on the stream, after the bucket's backward), summed so, and cast
// back into the float32 gradients (bf16_wire.h).
#ifndef RINGLET_PARALLEL_BUCKET_REDUCER_H_
#define RINGLET_PARALLEL_BUCKET_REDUCER_H_

#include <cstdint>
#include <exception>
#include <memory>
#include <unordered_map>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/api/work.h"
#include "nn/device_stream.h"
#include "nn/layers/module.h"
#include "parallel/bf16_wire.h"
#include "parallel/flat_tensors.h"
#include "parallel/gradient_reducer.h"

namespace ringlet::parallel {

class BucketReducer {
 public:
  // Hooks every parameter of `model` (Parameter::on_grad_ready; the model
  // must outlive this, which unhooks them when it goes): a bucket starts
  // once each of its parameters has reported, whatever module holds it.
  // `comm` is used only from the replica's compute thread, which calls
  // every method and runs the model's backward (the hooks); `stream` is
  // the replica's (the one that thread has bound).
  // `wire`: kFloat32 or kBFloat16 (std::invalid_argument otherwise, before
  // anything starts).
  BucketReducer(nn::Module& model, collectives::Communicator& comm,
                int64_t bucket_bytes,
                const nn::DeviceStream& stream = nn::DeviceStream(),
                collectives::DataType wire = collectives::DataType::kFloat32);
  ~BucketReducer();
  BucketReducer(const BucketReducer&) = delete;
  BucketReducer& operator=(const BucketReducer&) = delete;

  // Starts a step: no gradient is final yet. Backward passes run outside a
  // step (between FinishStep and the next BeginStep) reduce nothing: their
  // gradients accumulate into the next step's, as DDP's no_sync.
  void BeginStep();
  // Every gradient is final (a replica that skipped backward: zeros).
  void MarkAllReady();
  // The compute thread failed: the step's remaining buckets are skipped.
  void Cancel();
  // Waits until every bucket is summed into the gradients; rethrows the
  // communication error, if any. Returns the seconds spent in allreduce.
  double FinishStep();

  int num_buckets() const { return static_cast<int>(buckets_.size()); }

 private:
  struct Bucket {
    std::vector<nn::Parameter*> params;
    FlatTensors flat;  // Their gradients are views into it.
    int pending = 0;   // Parameters whose gradient is not final yet.
    GradWire wire;     // What the allreduce sums: flat, or a bfloat16 copy.
  };

  void MarkReady(nn::Parameter* param);
  // Counts `param` final once (a parameter used twice reports twice).
  void CountReady(nn::Parameter* param);
  // Starts the buckets whose parameters have all reported, in order.
  void StartReadyBuckets();
  // Starts bucket's allreduce (its Work joins works_).
  void StartBucket(Bucket& bucket);
  // Waits for every started call; after success, the stream waits for them
  // too. With `rethrow` false (a cancelled or failed step) it only waits,
  // and failures are not rethrown: the step's first failure is the cause.
  void FinishStarted(bool rethrow);

  collectives::Communicator& comm_;
  nn::DeviceStream stream_;
  collectives::DataType wire_;
  bool on_device_ = false;  // Calls ordered by events, not host waits.
  // The job has one rank: its gradients are the sums already (no buckets'
  // storage, no hooks, and no host wait timing backward as "comm").
  bool alone_ = false;
  std::vector<Bucket> buckets_;
  std::unordered_map<nn::Parameter*, int> bucket_of_;
  std::vector<nn::Parameter*> hooked_;
  // This step's started calls, in bucket order.
  std::vector<std::unique_ptr<collectives::Work>> started_;
  std::unordered_map<nn::Parameter*, bool> ready_;
  size_t next_ = 0;          // The next bucket to start.
  bool in_step_ = false;     // Between BeginStep and FinishStep.
  bool cancelled_ = false;   // Set by Cancel for the current step.
  double host_seconds_ = 0;  // Starting and waiting for the step's calls.
  double comm_seconds_ = 0;
};

// A BucketReducer of `bucket_bytes` per bucket as the engine's reducer
// (GradientReducer): its BeginLastMicroBatch is BeginStep, AllReady
// MarkAllReady, Reduce FinishStep. Needs a body with a Module
// (std::invalid_argument otherwise).
ReducerFactory BucketedReducer(int64_t bucket_bytes);

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_BUCKET_REDUCER_H_
