// The epoch loop both trainers share: shuffled batches split across the
// devices (d2l's split_batch), a training step on all devices, progress,
// evaluation on all devices, one line and one metrics record per epoch,
// and the plot.
#ifndef RINGLET_TRAINERS_COMMON_TRAINING_LOOP_H_
#define RINGLET_TRAINERS_COMMON_TRAINING_LOOP_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "data/fashion_mnist.h"
#include "nn/parallel/replica_group.h"
#include "trainers/common/metrics.h"

namespace ringlet::trainers {

// What the loop drives: a model replicated on `num_devices()` devices, all
// of the job's (under mpirun, every process runs the same loop on the same
// batches, and each computes the shards of its own devices).
class ParallelTrainer {
 public:
  virtual ~ParallelTrainer() = default;
  virtual int num_devices() const = 0;
  // One step on a batch given as one shard per device; the job's statistics.
  virtual nn::TrainStepStats TrainStep(
      const std::vector<nn::ReplicaInput>& shards) = 0;
  // Correct predictions over the job, every device classifying its shard.
  virtual int64_t CountCorrect(const std::vector<nn::ReplicaInput>& shards) = 0;
};

struct LoopOptions {
  int epochs = 10;
  int64_t batch_size = 256;
  uint64_t seed = 0;
  bool terminal = false;    // Progress as a bar (true) or as log lines.
  std::string metrics_out;  // JSON lines, when not empty.
  std::string plot_out;     // SVG, when not empty; rewritten every epoch.
  std::string plot_title;
};

// Trains for options.epochs; prints an EpochLine per epoch on `out` and the
// progress on `progress`. Returns every epoch's metrics.
std::vector<EpochMetrics> TrainEpochs(
    ParallelTrainer& trainer, const data::Split& train, const data::Split& test,
    const LoopOptions& options, std::ostream& out, std::ostream& progress);

// Accuracy on `split`, in batches of `batch_size` split across the devices
// (d2l's evaluate_accuracy_gpus).
double EvaluateAccuracy(ParallelTrainer& trainer, const data::Split& split,
                        int64_t batch_size);

// d2l's closing line: "test acc: 0.91, 13.4 sec/epoch on [cpu:0, cpu:1]".
std::string ClosingLine(const std::vector<EpochMetrics>& epochs,
                        const std::string& devices);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_TRAINING_LOOP_H_
