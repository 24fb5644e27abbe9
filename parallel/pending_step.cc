#include "parallel/pending_step.h"

#include <stdexcept>
#include <utility>

#include "parallel/replica_checks.h"

namespace ringlet::parallel {

PendingStep PendingStep::Finished(const TrainStepStats& stats) {
  PendingStep step;
  step.stats_ = stats;
  return step;
}

PendingStep::PendingStep(
    std::vector<QueuedReplicaStep> replicas,
    std::function<TrainStepStats(const TrainStepStats&)> sum)
    : replicas_(std::move(replicas)), sum_(std::move(sum)) {}

void PendingStep::AddLossesBySlot(
    int64_t slots, std::function<void(std::vector<double>*)> sum) {
  loss_slots_ = slots;
  sum_slots_ = std::move(sum);
}

const TrainStepStats& PendingStep::Finish() {
  if (replicas_.empty()) return stats_;
  TrainStepStats local;
  std::vector<double> slots(loss_slots_, 0.0);
  for (QueuedReplicaStep& r : replicas_) {
    // The reads below then wait for nothing (on any thread's queue).
    r.done.Wait();
    TrainStepStats mine;
    for (size_t k = 0; k < r.losses.size(); ++k) {
      nn::PendingLoss& loss = r.losses[k];
      TrainStepStats part;
      RecordLoss(loss.Finish(), 0, r.device, &part);
      if (loss_slots_ > 0) slots.at(r.loss_slots.at(k)) = part.loss_sum;
      mine.loss_sum += part.loss_sum;
      mine.correct += part.correct;
      if (mine.divergence.empty()) mine.divergence = part.divergence;
    }
    mine.samples = r.samples;
    if (mine.divergence.empty()) mine.divergence = r.divergence;
    const int bad = r.gradients.FirstBad();
    if (mine.divergence.empty() && bad >= 0) {
      const std::string name = r.gradient_names != nullptr
                                   ? r.gradient_names->at(bad)
                                   : "parameter " + std::to_string(bad);
      mine.divergence = "the gradient of " + name + " became nan or inf on " +
                        ToString(r.device);
    }
    local.loss_sum += mine.loss_sum;
    local.correct += mine.correct;
    local.samples += mine.samples;
    if (local.divergence.empty()) local.divergence = mine.divergence;
  }
  local.comm_seconds = replicas_.front().comm_seconds;
  local.exposed_comm_seconds = replicas_.front().exposed_comm_seconds;
  replicas_.clear();
  if (loss_slots_ > 0) local.loss_sum = 0;
  stats_ = sum_ ? sum_(local) : local;
  if (loss_slots_ > 0) {
    if (sum_slots_) sum_slots_(&slots);
    for (double slot : slots) stats_.loss_sum += slot;
  }
  return stats_;
}

PendingStep QueueReplicaSteps(
    ReplicaGroup& group,
    const std::function<void(int device, QueuedReplicaStep& q)>& step,
    std::function<void()> finished) {
  std::vector<QueuedReplicaStep> queued(group.size());
  group.RunQueued([&](int d) {
    QueuedReplicaStep& q = queued[d];
    q.device = group.devices()[d];
    q.done = nn::DeviceEvent(q.device);
    step(d, q);
    q.done.Record();
  });
  return PendingStep(
      std::move(queued),
      [&group, finished = std::move(finished)](const TrainStepStats& local) {
        const TrainStepStats job = group.SumOverProcesses(local);
        if (finished) finished();
        return job;
      });
}

}  // namespace ringlet::parallel
