// Gradient buckets reduced while backward is still running, as PyTorch's
// DistributedDataParallel does: parameters are grouped, in the order
// backward finishes them, into buckets of about `bucket_bytes`; a
// communication thread allreduces (sums) each bucket as soon as all its
// gradients are final, while the compute thread goes on with the earlier
// layers. Buckets are reduced strictly in order, so every replica makes the
// same sequence of collective calls.
//
// Each bucket is one flat buffer on the replica's device (FlatTensors): on
// a GPU the gradients are packed and unpacked by copies on the device's
// stream, the allreduce runs on the communicator's stream over device
// memory, and only this reducer's thread waits (for the pack to finish),
// never the compute thread. The reducer's thread packs and unpacks on the
// replica's lane, so its copies are ordered with the replica's kernels.
//
// With a communicator that orders calls on the device (NCCL), not even the
// reducer's thread waits per bucket: each bucket's pack records an event,
// its allreduce is queued on the communicator's stream after that event
// and records its own, and the unpacks are queued on the lane after those;
// the reducer's thread waits once per step, for the last allreduce (which
// keeps the timeout on a missing peer).
#ifndef RINGLET_NN_PARALLEL_BUCKET_REDUCER_H_
#define RINGLET_NN_PARALLEL_BUCKET_REDUCER_H_

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "collectives/communicator.h"
#include "nn/device_lane.h"
#include "nn/layers/containers.h"
#include "nn/parallel/flat_tensors.h"

namespace ringlet::nn {

class BucketReducer {
 public:
  // Hooks into every Sequential inside `model` (which must outlive this).
  // `comm` is used only by this reducer's thread during a step. `lane` is
  // the replica's (the one its compute thread has bound).
  BucketReducer(Module& model, collectives::Communicator& comm,
                int64_t bucket_bytes, const DeviceLane& lane = DeviceLane());
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
    std::vector<Parameter*> params;
    FlatTensors flat;     // Their gradients, on the replica's device.
    DeviceFence reduced;  // Passed once the allreduce wrote the sums.
    int pending = 0;      // Parameters whose gradient is not final yet.
  };

  void MarkReady(Module& module);
  void MarkReadyLocked(Parameter* param);
  void Loop();
  void ReduceBucket(Bucket& bucket);
  // The device-ordered way: queues bucket's pack and allreduce.
  void QueueBucket(Bucket& bucket);
  // After a step's buckets were queued: waits for the allreduces and
  // queues the unpacks.
  void FinishQueued(int queued);

  collectives::Communicator& comm_;
  DeviceLane lane_;
  bool on_device_ = false;  // Buckets ordered by events, not host waits.
  // The job has one rank: nothing to sum, no thread. (On one GPU with
  // NCCL the progress line read "comm 52%": the host's wait for the
  // one-rank allreduce, queued after backward, timed backward itself.)
  bool alone_ = false;
  std::vector<Bucket> buckets_;
  std::unordered_map<Parameter*, int> bucket_of_;
  std::unordered_map<Module*, std::vector<Parameter*>> params_of_;

  std::mutex mu_;
  std::condition_variable changed_;
  std::unordered_map<Parameter*, bool> ready_;
  uint64_t step_ = 0;       // Bumped by BeginStep.
  bool step_done_ = true;   // The thread has finished the current step.
  bool cancelled_ = false;  // Set by Cancel for the current step.
  bool stopping_ = false;
  std::exception_ptr error_;
  double comm_seconds_ = 0;
  std::thread thread_;
};

}  // namespace ringlet::nn

#endif  // RINGLET_NN_PARALLEL_BUCKET_REDUCER_H_
