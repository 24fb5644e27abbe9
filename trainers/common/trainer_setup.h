// What both trainer binaries do before training: the shared flags, the
// devices, the data, and turning errors into one line and an exit code.
#ifndef RINGLET_TRAINERS_COMMON_TRAINER_SETUP_H_
#define RINGLET_TRAINERS_COMMON_TRAINER_SETUP_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "data/fashion_mnist.h"
#include "nn/device.h"
#include "nn/tensor.h"
#include "trainers/common/job.h"
#include "trainers/common/run_settings.h"
#include "trainers/common/training_loop.h"

namespace ringlet::trainers {

struct TrainerFlags {
  std::string devices = "auto";
  std::string backend = "ring";
  int epochs = 10;
  int64_t batch_size = 0;  // 0: the trainer's default.
  double lr = 0;           // 0: the trainer's default.
  uint64_t seed = 0;
  std::string data_dir;
  int threads_per_device = 0;  // 0: the machine's cores shared out.
  int64_t limit = 0;           // 0: every training image.
  int64_t test_limit = 0;      // 0: every test image.
  std::string metrics_out;
  std::string plot_out;
  std::string params_out;
  std::string checkpoint_dir;  // Empty: no checkpoints.
  int checkpoint_every = 1;    // Epochs.
  bool resume = false;
  int64_t replica_check_every = 100;  // Steps; 0: never.
};

// Adds the flags of the list, with range checks, to `app`.
void AddTrainerFlags(CLI::App& app, TrainerFlags* flags, int default_epochs);

// Checks every output the flags name (metrics, plot, parameters, the
// checkpoint, whose folder is made if missing) before any work is done, and
// that --resume comes with --checkpoint_dir. Throws std::runtime_error.
void CheckTrainerOutputs(const TrainerFlags& flags, const std::string& program);

// <checkpoint_dir>/<program>.ckpt, or "" without --checkpoint_dir.
std::string CheckpointPath(const TrainerFlags& flags,
                           const std::string& program);

// The loop's options from the flags: epochs, seed, outputs (process 0
// only), progress, checkpoints and the stop-on-signal flag (one process
// only: under mpirun the job ends on a signal and resumes from the last
// epoch's checkpoint), --resume's checkpoint, the replica check. `batch_size`
// and `settings` are the run's own.
LoopOptions TrainerLoopOptions(const TrainerFlags& flags,
                               const std::string& program,
                               const TrainerJob& job, const std::string& where,
                               int64_t batch_size, const RunSettings& settings);

// The devices --devices names. The trainers run on CPU devices only in this
// build, so `auto` means one CPU device (d2l's try_all_gpus fallback) and
// mentions any GPUs it leaves unused on `notes`; cuda:N is an error naming
// how many GPUs exist. Throws nn::DeviceError.
std::vector<nn::Device> ResolveTrainerDevices(const std::string& spec,
                                              std::ostream& notes);

// Cores per device when --threads_per_device is 0: the machine's cores
// shared out (among the processes mpirun put on it, too), at least one.
int ThreadsPerDevice(int requested, int devices);

// The data set from --data_dir (or its defaults), cut to --limit and
// --test_limit images. Throws data::DataError.
data::FashionMnist LoadTrainerData(const TrainerFlags& flags);

// The one-line summary printed at start: "lenet_scratch on [cpu:0, cpu:1]:
// backend ring, batch 256 (128 per device), lr 0.2, 1 thread per device,
// 60000 training and 10000 test images, 10 epochs". `where` names the
// devices (TrainerJob::Where), `ranks` counts them over the job.
std::string SetupLine(const std::string& program, const std::string& where,
                      int ranks, const std::string& backend, int64_t batch_size,
                      double lr, int threads_per_device,
                      const data::FashionMnist& data, int epochs);

// --params_out: the tensors' values, float32, one after another, written
// atomically. Throws std::runtime_error when the file cannot be written.
void WriteParameters(const std::string& path,
                     const std::vector<const nn::Tensor*>& tensors);

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
