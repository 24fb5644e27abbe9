// A training step whose work is queued on every local device but whose
// statistics (loss, correct predictions, whether a gradient became
// non-finite) have not been read yet. On GPUs the host hands a step to the
// devices and goes on to prepare and queue the next one; it reads a step's
// statistics only when it asks (Finish), by then usually while the next
// step runs, so the GPU never idles waiting for the host. On CPU devices
// every step has run when it is queued and Finish only adds up.
#ifndef RINGLET_PARALLEL_PENDING_STEP_H_
#define RINGLET_PARALLEL_PENDING_STEP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nn/device.h"
#include "nn/device_event.h"
#include "nn/ops/loss.h"
#include "nn/ops/non_finite.h"
#include "parallel/replica_group.h"

namespace ringlet::parallel {

// One local device's part of a queued step.
struct QueuedReplicaStep {
  nn::Device device;
  int64_t samples = 0;
  // One per micro-batch the device ran (none for a device without samples).
  std::vector<nn::PendingLoss> losses;
  // With PendingStep::AddLossesBySlot: the slot of each of `losses`.
  std::vector<int64_t> loss_slots;
  // The gradients' non-finite counts, named (the names outlive the step:
  // the trainer's); a non-zero count means the update was skipped (on the
  // device) and the run diverged.
  nn::NonFiniteCounts gradients;
  const std::vector<std::string>* gradient_names = nullptr;
  // Known on the host already (e.g. the exact value on a CPU); else the
  // finish names the first counted gradient.
  std::string divergence;
  double comm_seconds = 0;
  double exposed_comm_seconds = 0;  // TrainStepStats' meaning.
  // Recorded after the device's last queued work for the step.
  nn::DeviceEvent done;
};

class PendingStep {
 public:
  // A finished step with empty statistics.
  PendingStep() = default;
  // A step that is finished already (what a synchronous trainer returns).
  static PendingStep Finished(const TrainStepStats& stats);
  // `replicas` in the order of the group's local devices; `sum` adds the
  // local statistics over the job's processes (a collective: every process
  // finishes its steps in the same order).
  PendingStep(std::vector<QueuedReplicaStep> replicas,
              std::function<TrainStepStats(const TrainStepStats&)> sum);

  PendingStep(PendingStep&&) = default;
  PendingStep& operator=(PendingStep&&) = default;

  // The loss as micro-shards of a reproducible step add it up: each loss
  // in its slot (QueuedReplicaStep::loss_slots), `sum` adding the slots
  // over the job's processes (exact: each slot is one rank's), then the
  // slots in order, so the loss has the same bits on any number of devices.
  void AddLossesBySlot(int64_t slots,
                       std::function<void(std::vector<double>*)> sum);

  // Waits for every device's part of the step and returns the job's
  // statistics: losses and counts summed, comm times device 0's, and the
  // first divergence. Once; later calls return the same.
  const TrainStepStats& Finish();
  bool finished() const { return replicas_.empty(); }

 private:
  std::vector<QueuedReplicaStep> replicas_;
  std::function<TrainStepStats(const TrainStepStats&)> sum_;
  int64_t loss_slots_ = 0;
  std::function<void(std::vector<double>*)> sum_slots_;
  TrainStepStats stats_;
};

// The step skeleton of the engine (replica_engine.h): `step(d, q)` runs on
// every local device of `group` at once (ReplicaGroup::RunQueued), with
// q's device and done event set; q.done is recorded after what it queued;
// the statistics of the returned step are summed over the job's processes
// when it is finished, and then `finished` (when given) is called.
PendingStep QueueReplicaSteps(
    ReplicaGroup& group,
    const std::function<void(int device, QueuedReplicaStep& q)>& step,
    std::function<void()> finished = nullptr);

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_PENDING_STEP_H_
