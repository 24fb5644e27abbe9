// What both trainer binaries do around training: outputs and checkpoints,
// the batch and learning rate, the header line, --params_in and
// --eval_only, and turning errors into one line and an exit code. The
// flags, devices and data have headers of their own, included here.
#ifndef RINGLET_TRAINERS_COMMON_TRAINER_SETUP_H_
#define RINGLET_TRAINERS_COMMON_TRAINER_SETUP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "data/dataset.h"
#include "nn/device.h"
#include "nn/optim/optimizer.h"
#include "nn/tensor.h"
#include "trainers/common/checkpoints/checkpoint.h"
#include "trainers/common/checkpoints/run_settings.h"
#include "trainers/common/flags/trainer_data.h"
#include "trainers/common/flags/trainer_devices.h"
#include "trainers/common/flags/trainer_flags.h"
#include "trainers/common/job.h"
#include "trainers/common/loop/training_loop.h"

namespace ringlet::trainers {

// Checks every output the flags name (metrics, CSV, plot, parameters, the
// checkpoint, whose folder is made if missing and locked for this run
// until it ends: folder_lock.h) before any work is done, and
// the flags that only work together (--resume with --checkpoint_dir,
// --eval_only with --params_in). Throws std::runtime_error.
void CheckTrainerOutputs(const TrainerFlags& flags, const std::string& program);

// Throws std::runtime_error when an output the flags name is one of the
// files the run reads (`inputs`: its data; --params_in), its checkpoint
// folder's lock or its checkpoint (CheckOutputsKeep).
void CheckTrainerOutputsSpare(const TrainerFlags& flags,
                              const std::string& program,
                              const std::vector<std::string>& inputs);

// {"run": {...}}: when the run started (UTC), where, the checkpoint it
// resumed from (when not empty), and `settings`; the metrics file's first
// line.
std::string RunLine(const std::string& where, const RunSettings& settings,
                    const std::string& resumed_from = "");

// --resume's checkpoint, read once before anything is built (its batch and
// lr are the run's unless given); null without --resume. In a job of
// several processes process 0 reads it and sends it to the others, whose
// hosts need not see --checkpoint_dir (collective). Throws CheckpointError
// on every process.
std::shared_ptr<const Checkpoint> ReadResumeCheckpoint(
    const TrainerFlags& flags, const std::string& program);

// What --batch_size=auto and --lr=auto mean for a trainer: d2l's values,
// per device and scaled by the job's devices (resnet_dp: 256 and 0.1 each),
// or for the whole batch (lenet_scratch: 256 and 0.2).
struct TrainerDefaults {
  int64_t batch_size = 256;
  double lr = 0.1;
  bool per_device = false;
};

// The run's global batch and learning rate, each with a note for the
// header ("scaled for 2 devices", "the checkpoint's", or "").
struct BatchAndLr {
  int64_t batch_size = 0;
  double lr = 0;
  std::string batch_note;
  std::string lr_note;
};

// One rule for both: a value given is taken as given (the batch over all
// devices, split across them; the lr as written). Left out, a resumed run
// keeps its checkpoint's (so it continues on another number of devices
// unchanged), and a fresh run takes `defaults`, scaled by `ranks` when
// they are per device; with --optimizer=adam or adamw the lr left out is
// torch's default for them, 0.001, whatever the devices.
BatchAndLr ResolveBatchAndLr(const TrainerFlags& flags,
                             const TrainerDefaults& defaults, int ranks,
                             const Checkpoint* resume);

// --params_in before training, --eval_only instead of it: loads the file
// into `engine` (when given); with --eval_only evaluates on the test set,
// prints "test acc: 0.912 on 10000 images in 4.1 s on [cpu:0]" and its
// lowest per-class accuracies on `out`, and returns true (the program is
// done); with --predict writes the predictions (prediction.h) to
// --predict_out or `out`, says how many on `progress`, and returns true.
bool LoadParamsAndMaybeEvaluate(const TrainerFlags& flags,
                                parallel::ReplicaEngine& engine,
                                const std::string& model,
                                const TrainerData& data, int64_t batch_size,
                                const std::string& where, bool terminal,
                                std::ostream& out, std::ostream& progress);

// Without --resume, a checkpoint already in --checkpoint_dir is replaced
// at this run's first checkpoint: "note: DIR/x.ckpt holds an earlier run
// (written DATE); this run starts afresh and replaces it (add --resume to
// continue that run instead)". "" when there is none.
// For a process its launcher restarted (torchrun's --max_restarts after a
// failure, Slurm's requeue: `restart_count` > 0): the flags with --resume
// set when --checkpoint_dir holds a checkpoint to go on from (on whatever
// number of processes the job now has), and in *note the line saying so;
// the flags unchanged and no note otherwise, or when --resume is given.
// Process 0's folder decides for every process of the job (collective when
// restart_count > 0, --resume is not given and --checkpoint_dir is).
TrainerFlags ResumeAfterRestart(const TrainerFlags& flags,
                                const std::string& program, int restart_count,
                                std::string* note);

std::string ReplacedCheckpointNote(const TrainerFlags& flags,
                                   const std::string& program);

// <checkpoint_dir>/<program>.ckpt, or "" without --checkpoint_dir.
std::string CheckpointPath(const TrainerFlags& flags,
                           const std::string& program);

// The loop's options from the flags: epochs, seed, outputs (process 0
// only), progress, checkpoints and, with --checkpoint_dir, the stop on
// SIGINT or SIGTERM (under mpirun agreed by every process after each
// step: LoopOptions::agree_stop), `resume` (ReadResumeCheckpoint's), the
// replica check. `run` and `settings` are the run's own.
LoopOptions TrainerLoopOptions(const TrainerFlags& flags,
                               const std::string& program,
                               const TrainerJob& job, const std::string& where,
                               const BatchAndLr& run,
                               const RunSettings& settings,
                               std::shared_ptr<const Checkpoint> resume);

// The one-line summary printed at start: "resnet_dp on [cpu:0, cpu:1]:
// backend ring, batch 512 (256 per device, scaled for 2 devices), lr 0.2
// (scaled for 2 devices), sgd (momentum 0, weight decay 0), constant
// schedule, fp32, 1 thread per device, 60000 training and 10000 test
// images, 10 epochs" ("samples" where inputs are not images; the data
// set's name unless it is Fashion-MNIST). `where` names the devices
// (TrainerJob::Where), `ranks` counts them over the job; the threads are
// left out when threads_per_device is 0 (GPU devices).
std::string SetupLine(const std::string& program, const std::string& where,
                      int ranks, const std::string& backend,
                      const BatchAndLr& run, const TrainerFlags& flags,
                      int threads_per_device, const TrainerData& data);

// --params_out (when given): `state`'s model tensors with their names and
// shapes (parameter_file.h), written atomically.
// With --keep_best and --checkpoint_dir: DIR/<program>.best.ckpt; else "".
std::string BestCheckpointPath(const TrainerFlags& flags,
                               const std::string& program);

// "kept epoch 6 (validation acc 0.912) in model.safetensors and
// ckpt/resnet_dp.best.ckpt": where --keep_best left the best epoch of
// `epochs`.
std::string KeptBestLine(const TrainerFlags& flags, const std::string& program,
                         const std::vector<EpochMetrics>& epochs);

void WriteTrainedParameters(const TrainerFlags& flags, const std::string& model,
                            const parallel::NamedTensors& state);

// Runs a trainer's main: parses argv into `app` (--help prints and returns
// 0; a bad flag prints CLI11's message and returns non-zero), then `body`;
// an exception becomes "<program>: error: <what>" on stderr and exit code 1
// (under mpirun, "error on process P of N (host H)", and every process of
// the job ends); TrainingInterrupted becomes "<program>: <what>" and exit
// code 128 + the signal, as a shell reports a process the signal ended.
int RunTrainerMain(CLI::App& app, int argc, char** argv,
                   const std::function<int()>& body);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_TRAINER_SETUP_H_
