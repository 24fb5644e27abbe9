// What a reproducible data-parallel step is made of, for DataParallel and
// the from-scratch trainer alike. The promise: the same parameters, bit for
// bit, on any number of devices and processes (same build, same kind of
// device, same op threads per device).
//
//   micro-shards  each batch is cut into a fixed number M of contiguous
//                 micro-shards (d2l's split_batch into M, whatever the
//                 devices); rank r of R runs micro-shards
//                 [r M / R, (r + 1) M / R), each as a batch of its own.
//   gradients     each micro-shard's gradient is kept apart and the M of
//                 them are summed by ReproducibleAllReduce, whose bits do
//                 not depend on where each was computed.
//   batch norm    each micro-shard normalises with its own statistics
//                 (ghost batch norm); the running statistics become the
//                 mean, in micro-shard order, of what each micro-shard's
//                 forward made of the step's starting values.
//   loss          each micro-shard's loss in its own slot, the slots added
//                 in order.
// On GPUs the gradients stay in GPU memory and are summed there
// (collectives' ReproducibleAllReduceOnDevice, the host sum's bits); the
// batch-norm buffers pass through host memory and a host communicator
// (ReplicaGroup::host_comm).
#ifndef RINGLET_PARALLEL_MICRO_SHARDS_H_
#define RINGLET_PARALLEL_MICRO_SHARDS_H_

#include <cstdint>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/api/types.h"
#include "nn/tensor.h"
#include "parallel/replica_group.h"

namespace ringlet::parallel {

// Throws std::invalid_argument unless 1 <= ranks <= micro_shards (every
// rank needs one) and micro_shards <= 4096; `who` starts the message.
void CheckMicroShards(int micro_shards, int ranks, const char* who);

// One replica's micro-shard gradients, summed over the job.
class ReproducibleGradients {
 public:
  // wire: kFloat32, or kBFloat16 (each micro-shard's gradient rounded to
  // bfloat16 first and the sum rounded to bfloat16, as the bf16 wire does
  // to a plain sum; the bytes on the wire are float64 either way). On a
  // GPU `device` the summands stay in its memory.
  explicit ReproducibleGradients(collectives::DataType wire,
                                 nn::Device device = nn::Device::Cpu());

  // Keeps a copy of `grads` (on the device's) as one summand, each tensor
  // in blocks of the sum's grid of its own (so a large gradient does not
  // coarsen a small one's); host storage is reused from step to step.
  void Add(const std::vector<nn::Tensor*>& grads);
  // grads <- the sum of every rank's summands (none here: it adds
  // nothing), the same bits on every rank and on CPUs and GPUs; forgets
  // the summands. Collective over `comm`: a communicator of host buffers,
  // or on a GPU of that GPU's buffers (nccl, cuda_ring, host-staged).
  void SumInto(collectives::Communicator& comm,
               const std::vector<nn::Tensor*>& grads);

 private:
  // The GPU path of Add and SumInto.
  void AddOnDevice(const std::vector<nn::Tensor*>& grads, int64_t count);
  void SumOnDeviceInto(collectives::Communicator& comm,
                       const std::vector<nn::Tensor*>& grads, int64_t count);

  collectives::DataType wire_;
  nn::Device device_;
  size_t used_ = 0;  // Summands added this step.
  std::vector<nn::Tensor>
      on_device_;  // A GPU's summands, flat, of the wire's type.
  std::vector<std::vector<float>> float32_;      // The float32 wire's.
  std::vector<std::vector<uint16_t>> bfloat16_;  // The bfloat16 wire's.
  std::vector<float> staging_;    // A bfloat16 summand's copy; the sum.
  std::vector<uint16_t> narrow_;  // The bfloat16 sum.
  std::vector<int64_t> offsets_;  // Of each gradient in a summand.
};

// Batch norm's running statistics (any module buffers) over micro-shards:
//   Begin(slots) before the step; after micro-shard s's forward Record(s)
//   keeps what it made of the buffers and puts the starting values back;
//   Finish sets every buffer to the mean over the recorded slots (every
//   rank's, in slot order).
class MicroShardBuffers {
 public:
  explicit MicroShardBuffers(std::vector<nn::Tensor*> buffers);
  void Begin(int64_t slots);
  void Record(int64_t slot);
  // `used[s]`: whether slot s was recorded by some rank (a non-empty
  // micro-shard), the same on every rank. Collective over `comm`, a
  // communicator of host buffers.
  void Finish(collectives::Communicator& comm, const std::vector<char>& used);

 private:
  std::vector<nn::Tensor*> buffers_;
  int64_t count_ = 0;  // Floats over every buffer.
  std::vector<float> start_;
  std::vector<float> slots_;  // [slots, count_]; zeros where not this rank's.
};

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_MICRO_SHARDS_H_
