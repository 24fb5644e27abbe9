// The devices of a data-parallel run, their worker threads and their
// communicators: what both trainers' replicas share. A failure on one
// device aborts its communicators, so the others stop at once instead of
// at the timeout, and the first failure (the cause) is what the caller sees.
//
// A job may span processes (mpirun, options.processes): this process's
// devices are then ranks [first_rank(), first_rank() + size()) of a job of
// ranks() ranks, and a batch is split into one shard per rank of the job.
#ifndef RINGLET_PARALLEL_REPLICA_GROUP_H_
#define RINGLET_PARALLEL_REPLICA_GROUP_H_

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/api/process_group.h"
#include "data/shard.h"
#include "nn/compute_options.h"
#include "nn/device.h"
#include "nn/device_stream.h"
#include "nn/tensor.h"
#include "parallel/device_workers.h"

namespace ringlet::parallel {

// The shard's inputs as a [count, input shape...] float32 tensor on
// `device`, copied without the host waiting (on a GPU: read it on the
// calling thread's stream only). Throws ShapeError for a shard with samples
// but no input shape, std::invalid_argument for inputs other than float32
// (convert them when loading).
nn::Tensor ShardInputs(const data::Shard& shard, nn::Device device);

struct TrainStepStats {
  double loss_sum = 0;  // Summed over the batch's samples.
  int64_t correct = 0;  // Training predictions that were right.
  int64_t samples = 0;
  double comm_seconds = 0;  // Device 0's time in collective calls.
  // Of it, what device 0 waited for after its backward: the part not
  // hidden behind backward (host time: on a GPU the host queues on and
  // waits later, so this reads low there).
  double exposed_comm_seconds = 0;
  // Empty while every loss and gradient is finite; else what became
  // non-finite, and where: "the loss became nan on cpu:1".
  std::string divergence;
};

struct ReplicaGroupOptions {
  std::string backend = "ring";  // A collectives backend (ring, naive, ...).
  int threads_per_device = 1;
  // How each local device's replica computes (nn/compute_options.h), one
  // per device; empty: the options of the thread making the group.
  std::vector<nn::ComputeOptions> compute;
  // Independent communicator groups, for collectives issued from different
  // threads of a device (gradients on one, batch norm on another).
  int comm_groups = 1;
  // GPU replicas also get communicators of host buffers (host_comm), for
  // sums computed on the host (reproducible steps).
  bool host_comms = false;
  collectives::CommOptions comm;
  // The job's processes; null: this process alone holds every rank.
  std::shared_ptr<collectives::ProcessGroup> processes;
};

class ReplicaGroup {
 public:
  // Devices are all CPU devices (each at most once) or all GPUs (a GPU may
  // repeat: several replicas on one GPU, for the ring and naive backends).
  // Under mpirun (options.processes) GPU replicas talk through NCCL, or
  // through host memory for the ring, naive and mpi backends.
  // Throws DeviceError for an empty list, a CPU device listed twice, a mix,
  // or a GPU that does not exist;
  // std::invalid_argument for an unknown
  // backend; CollectiveError when the backend cannot run here;
  // std::invalid_argument when options.processes does not hold this many
  // local ranks.
  ReplicaGroup(const std::vector<nn::Device>& devices,
               const ReplicaGroupOptions& options);

  // Runs fn(d) for every device at once, each on its worker thread with
  // the device's stream bound (see stream()); see the file comment for
  // failures. Returns once every stream's queued work has run, so the caller
  // may read any replica's tensors.
  void Run(const std::function<void(int device)>& fn);
  // As Run, but returns once every fn has returned, without waiting for
  // the work it queued on a GPU stream: whoever reads its results waits for a
  // DeviceEvent fn recorded. Tensors fn lets go of are safe (their memory
  // returns to the stream's pool, reused only by work queued after it); host
  // memory a queued copy reads must stay (shards go through pinned
  // staging, so they may not). After a failure it waits, as Run does.
  void RunQueued(const std::function<void(int device)>& fn);
  // Records `error` as the cause unless one is recorded, and aborts device
  // d's communicators. For code that must clean up before rethrowing.
  void Fail(int device, std::exception_ptr error);

  collectives::Communicator& comm(int device, int group = 0) {
    return *comms_.at(group).at(device);
  }
  // Device d's communicator of host buffers: comm(d) on CPU devices; on
  // GPUs one of the ring backend over host memory (options.host_comms).
  collectives::Communicator& host_comm(int device);
  // This process's devices.
  int size() const { return static_cast<int>(devices_.size()); }
  // Ranks in the whole job, and the global rank of local device 0.
  int ranks() const { return processes_->size(); }
  int first_rank() const { return processes_->first_rank(); }
  // Sums step statistics (all but comm_seconds) or a count over the job's
  // processes; call from one thread, outside Run.
  TrainStepStats SumOverProcesses(const TrainStepStats& local);
  int64_t SumOverProcesses(int64_t local);
  void SumOverProcesses(std::vector<double>* values);
  const std::vector<nn::Device>& devices() const { return devices_; }
  // Device d's stream: on a GPU its own stream, handles and memory, so
  // replicas sharing a GPU neither share a cuDNN handle nor wait on each
  // other's queue. A thread of the replica's other than its worker (a
  // gradient reducer) binds it with DeviceStream::Use.
  const nn::DeviceStream& stream(int device) const {
    return streams_.at(device);
  }
  bool on_gpus() const { return devices_.front().is_cuda(); }
  const std::string& backend() const { return options_.backend; }

 private:
  std::vector<nn::Device> devices_;
  ReplicaGroupOptions options_;
  // options.processes, or an InProcessGroup when this process is the job.
  std::shared_ptr<collectives::ProcessGroup> processes_;
  std::vector<std::vector<std::unique_ptr<collectives::Communicator>>> comms_;
  std::vector<std::unique_ptr<collectives::Communicator>> host_comms_;
  void RunOnWorkers(const std::function<void(int device)>& fn,
                    bool wait_for_streams);

  std::vector<nn::DeviceStream> streams_;
  std::unique_ptr<DeviceWorkers> workers_;
  std::mutex failure_mu_;
  std::exception_ptr first_failure_;
};

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_REPLICA_GROUP_H_
