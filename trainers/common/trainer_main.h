// The two halves of a trainer's main around the model it builds: before,
// everything the flags decide (devices, backend, the job, the checkpoint to
// resume, batch and learning rate, the data, the run's settings, agreed by
// every process); after, the run itself (--params_in, --eval_only, the
// header line, training, the closing line, --params_out).
#ifndef RINGLET_TRAINERS_COMMON_TRAINER_MAIN_H_
#define RINGLET_TRAINERS_COMMON_TRAINER_MAIN_H_

#include <memory>
#include <string>
#include <vector>

#include "nn/compute_options.h"
#include "nn/device.h"
#include "trainers/common/checkpoints/checkpoint.h"
#include "trainers/common/checkpoints/run_settings.h"
#include "trainers/common/flags/trainer_data.h"
#include "trainers/common/job.h"
#include "trainers/common/loop/training_loop.h"
#include "trainers/common/trainer_setup.h"

namespace ringlet::trainers {

// What a trainer binary is.
struct TrainerProgram {
  std::string name;   // "resnet_dp": messages, the checkpoint's file name.
  std::string model;  // "resnet18": the parameter files' model.
  TrainerDefaults defaults;
};

// The run as the flags decide it, before a model exists.
struct PreparedRun {
  std::vector<nn::Device> devices;
  std::string backend;
  TrainerJob job;
  std::string where;  // TrainerJob::Where.
  std::shared_ptr<const Checkpoint> resume;
  // After a regroup (regroup.h): its metrics record.
  std::string membership_record;
  BatchAndLr run;
  TrainerData data;
  RunSettings settings;
  int threads_per_device = 1;  // ThreadsPerDevice's.
  // What the flags ask of the ops: the trainer binds it (nn::ComputeScope)
  // before it makes its devices' workers, which take it on.
  nn::ComputeOptions compute;
};

// Resolves the flags in the order errors should come (devices, outputs,
// checkpoint, data) and has every process agree on the settings, `extra`
// (a trainer's own, such as sync_bn) appended. Throws what the steps throw.
PreparedRun PrepareRun(const TrainerFlags& flags, const TrainerProgram& program,
                       const RunSettings& extra = {});

// Runs `engine` as the flags say: loads --params_in, evaluates and stops
// with --eval_only, else prints the header (`header_suffix` after it),
// trains, prints d2l's closing line and writes --params_out. Returns the
// exit code.
int TrainAndReport(const TrainerFlags& flags, const TrainerProgram& program,
                   PreparedRun& prepared, parallel::ReplicaEngine& engine,
                   const std::string& header_suffix = "");

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_TRAINER_MAIN_H_
