// The devices of a data-parallel run, their worker threads and their
// communicators: what both trainers' replicas share. A failure on one
// device aborts its communicators, so the others stop at once instead of
// at the timeout, and the first failure (the cause) is what the caller sees.
#ifndef RINGLET_NN_PARALLEL_REPLICA_GROUP_H_
#define RINGLET_NN_PARALLEL_REPLICA_GROUP_H_

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "nn/device.h"
#include "nn/parallel/device_workers.h"

namespace ringlet::nn {

// One device's part of a batch: `count` samples (images and labels).
struct ReplicaInput {
  const float* images = nullptr;
  const int32_t* labels = nullptr;
  int64_t count = 0;
};

struct TrainStepStats {
  double loss_sum = 0;  // Summed over the batch's samples.
  int64_t correct = 0;  // Training predictions that were right.
  int64_t samples = 0;
  double comm_seconds = 0;  // Device 0's time in collective calls.
};

struct ReplicaGroupOptions {
  std::string backend = "ring";  // A collectives backend (ring, naive, ...).
  int threads_per_device = 1;
  // Independent communicator groups, for collectives issued from different
  // threads of a device (gradients on one, batch norm on another).
  int comm_groups = 1;
  collectives::CommOptions comm;
};

class ReplicaGroup {
 public:
  // Throws DeviceError for an empty list, a device listed twice or one this
  // build of nn cannot compute on; std::invalid_argument for an unknown
  // backend; CollectiveError when the backend cannot run here.
  ReplicaGroup(const std::vector<Device>& devices,
               const ReplicaGroupOptions& options);

  // Runs fn(d) for every device at once, each on its worker thread; see
  // the file comment for failures.
  void Run(const std::function<void(int device)>& fn);
  // Records `error` as the cause unless one is recorded, and aborts device
  // d's communicators. For code that must clean up before rethrowing.
  void Fail(int device, std::exception_ptr error);

  collectives::Communicator& comm(int device, int group = 0) {
    return *comms_.at(group).at(device);
  }
  int size() const { return static_cast<int>(devices_.size()); }
  const std::vector<Device>& devices() const { return devices_; }
  const std::string& backend() const { return options_.backend; }

 private:
  std::vector<Device> devices_;
  ReplicaGroupOptions options_;
  std::vector<std::vector<std::unique_ptr<collectives::Communicator>>> comms_;
  std::unique_ptr<DeviceWorkers> workers_;
  std::mutex failure_mu_;
  std::exception_ptr first_failure_;
};

}  // namespace ringlet::nn

#endif  // RINGLET_NN_PARALLEL_REPLICA_GROUP_H_
