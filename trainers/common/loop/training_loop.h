// The epoch loop both trainers share, driving parallel/'s engine directly:
// shuffled batches, each loaded as this process's shards (the loader cuts
// them with the engine's layout: d2l's split_batch), a training step on
// all devices, progress,
// evaluation on all devices, one line and one metrics record per epoch,
// and the plot. It also keeps the run honest and resumable: a non-finite
// loss or gradient stops it at once, replicas are compared every so many
// steps, and checkpoints are written every so many epochs and when a stop
// is requested (SIGINT, SIGTERM), from which a later run continues.
#ifndef RINGLET_TRAINERS_COMMON_LOOP_TRAINING_LOOP_H_
#define RINGLET_TRAINERS_COMMON_LOOP_TRAINING_LOOP_H_

#include <csignal>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/transforms.h"
#include "nn/out_of_memory.h"
#include "parallel/replica_engine.h"
#include "trainers/common/checkpoints/checkpoint.h"
#include "trainers/common/checkpoints/run_settings.h"
#include "trainers/common/loop/evaluation.h"
#include "trainers/common/loop/lr_schedule.h"
#include "trainers/common/outputs/metrics.h"

namespace ringlet::trainers {

// Training stopped because a loss or gradient became inf or NaN.
class TrainingDiverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Replicas that should be bitwise equal were found to differ.
class ReplicasDiffer : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Training stopped on request (a signal) after a step; what() says where
// and whether a checkpoint was written.
class TrainingInterrupted : public std::runtime_error {
 public:
  TrainingInterrupted(int signal, const std::string& what)
      : std::runtime_error(what), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

// Memory ran out in a step or an evaluation: what() names the device, the
// bytes asked for, held and free, and what to do (OutOfMemoryAdvice).
class TrainingOutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The shortage and the way out: "a batch of 24000 (24000 per device) did
// not fit, nor would one above 22000 (scaling what the step held when
// memory ran out): use a smaller --batch_size, or more devices". The bound
// scales the largest shard by the memory there was (held + free) over what
// the step had asked for (held + requested): memory grows at least in
// proportion to the batch. Without a free count, no bound.
std::string OutOfMemoryAdvice(const nn::MemoryShortage& shortage,
                              int64_t batch_size, int devices);
// Throws TrainingOutOfMemory for `e` (an nn::OutOfMemory says more).
[[noreturn]] void ThrowOutOfMemory(const std::bad_alloc& e, int64_t batch_size,
                                   int devices);

struct LoopOptions {
  int epochs = 10;
  int64_t batch_size = 256;
  // Batches per optimizer step (gradient accumulation); the epoch's last
  // step takes what is left. A step counts as one for the schedule, the
  // replica checks and a checkpoint's position.
  int accumulate_steps = 1;
  uint64_t seed = 0;
  // Applied to each training sample (--augment; data/transforms.h), never
  // to evaluation's.
  std::vector<data::Transform> augment;
  // The learning rate of every step (schedule.epochs and steps_per_epoch
  // are filled in by the loop).
  LrSchedule schedule;
  bool terminal = false;    // Progress as a bar (true) or as log lines.
  std::string metrics_out;  // JSON lines, when not empty.
  std::string run_line;     // The metrics file's first line ({"run": ...}).
  std::string csv_out;      // CSV, when not empty; rewritten every epoch.
  std::string plot_out;     // SVG, when not empty; rewritten every epoch.
  std::string plot_title;
  std::string where;  // The devices, as a checkpoint records them.

  // A checkpoint is written to checkpoint_path (when not empty) after
  // every checkpoint_every-th epoch, after the last one, and when a stop is
  // requested; it records `settings`.
  std::string checkpoint_path;
  int checkpoint_every = 1;
  // Also every checkpoint_steps-th step of the run (0: never): the state is
  // copied between steps and written by a thread of its own while the next
  // steps train. Every process finishes its step in flight there.
  int64_t checkpoint_steps = 0;
  RunSettings settings;
  // Continue from this checkpoint (read from resume_path): its state is
  // checked against the trainer's and `settings` (CheckpointError), loaded,
  // "resumed from PATH at epoch E, step S (written DATE on DEVICES)" is
  // printed, and the run goes on from its position with its metrics.
  std::shared_ptr<const Checkpoint> resume;
  std::string resume_path;
  // A resume after the launcher restarted the job (restart_count > 0): a
  // {"restart": ...} record in the metrics with the launcher, the count,
  // the checkpoint's epoch and step, and the seconds since it was written
  // (the steps lost and the restart itself).
  std::string launcher;
  int restart_count = 0;
  // Given: every step is finished before the next is queued and its state
  // handed here (--on_process_loss=regroup keeps the last two in memory).
  std::function<void(std::shared_ptr<const Checkpoint>)> keep_step;
  // A record for the metrics once they are open (a regroup's), if any.
  std::string membership_record;
  // A classifier's classes (the model's outputs, one each): the test
  // split's confusion matrix is counted after every epoch and drawn beside
  // the plot (ConfusionSvgPath); the last one ends the metrics file and its
  // lowest per-class accuracies are printed once the epochs are done; 0:
  // none. `class_names` label them (numbers when it has not one a class).
  int64_t classes = 0;
  std::vector<std::string> class_names;
  // Held-out images (--validation), evaluated after every epoch (val_acc)
  // and by eval_every; null: none.
  data::DatasetPtr validation;
  // With `validation`: after an epoch whose validation accuracy beats
  // every earlier one, a checkpoint of it is written to
  // best_checkpoint_path (when not empty) and on_best is called (when
  // set) with its metrics; with early_stop > 0 the run ends after
  // early_stop epochs without a better one (a line says so; the last
  // epoch checkpointed), and a resumed run that had so ended trains
  // nothing.
  std::string best_checkpoint_path;
  std::function<void(const EpochMetrics&)> on_best;
  int early_stop = 0;
  // Every this many optimizer steps (counted over the run), the accuracy on
  // `validation` (else the test set) is printed (EvalLine) and appended to
  // the metrics; 0: only after each epoch.
  int64_t eval_every = 0;
  // Replicas are compared every this many steps; 0: never.
  int64_t replica_check_every = 100;
  // Queue step t + 1 before finishing step t (GPUs compute while the host
  // reads and prepares); false finishes every step before the next.
  bool overlap_steps = true;
  // Polled after every step: once non-zero (a signal number), the loop
  // writes a checkpoint (if it has a path) and throws TrainingInterrupted.
  // A failed `out` or `progress` stream (a closed pipe, a full disk) stops
  // the run the same way, as SIGPIPE, its what() starting with
  // output_failure()'s reason when given.
  const volatile std::sig_atomic_t* stop = nullptr;
  std::function<std::string()> output_failure;
  // A job of several processes stops as one: called by every process after
  // every step with its own `stop` (0: none), it returns the job's (not 0
  // when any process has one), the same everywhere, so all stop after the
  // same step and one consistent checkpoint is written. Null: alone.
  std::function<int(int)> agree_stop;
};

// Trains `engine`'s replicas (every device of the job: under mpirun each
// process runs the same loop on the same batches, loading and computing
// its own devices' shards) up to options.epochs; prints an EpochLine per
// epoch on `out` and the progress on `progress`. Returns every epoch's
// metrics (a resumed run's earlier epochs included). Throws TrainingDiverged,
// ReplicasDiffer, TrainingInterrupted, CheckpointError, TrainingOutOfMemory
// (for any std::bad_alloc; checkpoints written so far stay as they are),
// data::DataError when the data fails to read (the last finished step
// checkpointed first, where there is a path, and the message says so), and
// whatever else the engine throws.
std::vector<EpochMetrics> TrainEpochs(parallel::ReplicaEngine& engine,
                                      const data::DatasetPtr& train,
                                      const data::DatasetPtr& test,
                                      const LoopOptions& options,
                                      std::ostream& out,
                                      std::ostream& progress);

// d2l's closing line: "test acc: 0.91, 13.4 sec/epoch on [cpu:0, cpu:1]".
std::string ClosingLine(const std::vector<EpochMetrics>& epochs,
                        const std::string& devices);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_LOOP_TRAINING_LOOP_H_
