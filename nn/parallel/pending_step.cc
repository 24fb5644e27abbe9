#include "nn/parallel/pending_step.h"

#include <utility>

#include "nn/parallel/replica_checks.h"

namespace ringlet::nn {

PendingStep PendingStep::Finished(const TrainStepStats& stats) {
  PendingStep step;
  step.stats_ = stats;
  return step;
}

PendingStep::PendingStep(
    std::vector<QueuedReplicaStep> replicas,
    std::function<TrainStepStats(const TrainStepStats&)> sum)
    : replicas_(std::move(replicas)), sum_(std::move(sum)) {}

const TrainStepStats& PendingStep::Finish() {
  if (replicas_.empty()) return stats_;
  TrainStepStats local;
  for (QueuedReplicaStep& r : replicas_) {
    // The reads below then wait for nothing (on any thread's queue).
    r.done.Wait();
    TrainStepStats mine;
    for (PendingLoss& loss : r.losses) {
      TrainStepStats part;
      RecordLoss(loss.Finish(), 0, r.device, &part);
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
  replicas_.clear();
  stats_ = sum_ ? sum_(local) : local;
  return stats_;
}

}  // namespace ringlet::nn
