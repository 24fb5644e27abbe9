// What both trainer binaries do before training: the shared flags, the
// devices, the data, and turning errors into one line and an exit code.
#ifndef RINGLET_TRAINERS_COMMON_TRAINER_SETUP_H_
#define RINGLET_TRAINERS_COMMON_TRAINER_SETUP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "data/fashion_mnist.h"
#include "nn/device.h"
#include "nn/optim/optimizer.h"
#include "nn/tensor.h"
#include "trainers/common/checkpoint.h"
#include "trainers/common/job.h"
#include "trainers/common/run_settings.h"
#include "trainers/common/training_loop.h"

namespace ringlet::trainers {

struct TrainerFlags {
  std::string devices = "auto";
  std::string backend = "auto";    // See ResolveBackend.
  std::string precision = "fp32";  // GPUs: fp32 or tf32 (ApplyGpuFlags).
  // GPUs: how cuDNN's convolution algorithms are chosen (ApplyGpuFlags).
  std::string conv_algorithms = "measure";
  int epochs = 10;
  int64_t batch_size = 0;    // 0 (auto): see ResolveBatchAndLr.
  int accumulate_steps = 1;  // Batches per optimizer step.
  double lr = 0;             // 0 (auto): see ResolveBatchAndLr.
  uint64_t seed = 0;
  std::string data_dir;
  int threads_per_device = 0;  // 0: the machine's cores shared out.
  int64_t limit = 0;           // 0: every training image.
  double validation = 0;       // Share of the training images held out.
  int64_t eval_every = 0;      // Steps; 0: after each epoch only.
  int64_t test_limit = 0;      // 0: every test image.
  std::string metrics_out;
  std::string plot_out;
  std::string csv_out;
  std::string params_out;
  std::string params_in;          // Start from these parameters.
  bool eval_only = false;         // Evaluate --params_in, do not train.
  std::string optimizer = "sgd";  // sgd, adam or adamw (nn/optim).
  double momentum = 0;            // SGD as torch.optim.SGD; 0: d2l's plain SGD.
  double weight_decay = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam's and AdamW's.
  std::string lr_schedule = "constant";
  double warmup_epochs = 0;
  double clip_grad_norm = 0;   // 0: no clipping.
  std::string checkpoint_dir;  // Empty: no checkpoints.
  int checkpoint_every = 1;    // Epochs.
  bool resume = false;
  int64_t replica_check_every = 100;  // Steps; 0: never.
  // Queue step t + 1 before reading step t (LoopOptions::overlap_steps).
  bool overlap_steps = true;
};

// Adds the trainers' flags, with range checks, to `app`. `batch_default`
// and `lr_default` say in --help what auto means for --batch_size and --lr.
void AddTrainerFlags(CLI::App& app, TrainerFlags* flags, int default_epochs,
                     const std::string& batch_default,
                     const std::string& lr_default);

// Checks every output the flags name (metrics, CSV, plot, parameters, the
// checkpoint, whose folder is made if missing) before any work is done, and
// the flags that only work together (--resume with --checkpoint_dir,
// --eval_only with --params_in). Throws std::runtime_error.
void CheckTrainerOutputs(const TrainerFlags& flags, const std::string& program);

// Appends the training knobs (--momentum, --weight_decay, --lr_schedule,
// --warmup_epochs, --clip_grad_norm, --params_in) to `settings`: they
// change the trajectory, so a resumed run and every process must match.
void AddTrainingSettings(const TrainerFlags& flags, RunSettings* settings);

// {"run": {...}}: when the run started (UTC), where, the checkpoint it
// resumed from (when not empty), and `settings`; the metrics file's first
// line.
std::string RunLine(const std::string& where, const RunSettings& settings,
                    const std::string& resumed_from = "");

// --resume's checkpoint, read once before anything is built (its batch and
// lr are the run's unless given); null without --resume. Throws
// CheckpointError.
std::shared_ptr<const Checkpoint> ReadResumeCheckpoint(
    const TrainerFlags& flags, const std::string& program);

// The optimizer the flags name, at learning rate `lr`.
nn::OptimizerOptions OptimizerOf(const TrainerFlags& flags, double lr);

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
// into `trainer` (when given); with --eval_only evaluates on `test`, prints
// "test acc: 0.912 on 10000 images in 4.1 s on [cpu:0]" on `out` and
// returns true (the program is done).
bool LoadParamsAndMaybeEvaluate(const TrainerFlags& flags,
                                ParallelTrainer& trainer,
                                const std::string& model,
                                const data::Split& test, int64_t batch_size,
                                const std::string& where, bool terminal,
                                std::ostream& out, std::ostream& progress);

// <checkpoint_dir>/<program>.ckpt, or "" without --checkpoint_dir.
std::string CheckpointPath(const TrainerFlags& flags,
                           const std::string& program);

// The loop's options from the flags: epochs, seed, outputs (process 0
// only), progress, checkpoints and the stop-on-signal flag (one process
// only: under mpirun the job ends on a signal and resumes from the last
// epoch's checkpoint), `resume` (ReadResumeCheckpoint's), the replica
// check. `run` and `settings` are the run's own.
LoopOptions TrainerLoopOptions(const TrainerFlags& flags,
                               const std::string& program,
                               const TrainerJob& job, const std::string& where,
                               const BatchAndLr& run,
                               const RunSettings& settings,
                               std::shared_ptr<const Checkpoint> resume);

// The devices --devices names: `auto` is every usable GPU, else one CPU
// device (d2l's try_all_gpus); under mpirun `auto` is the GPU of this
// process's local rank (one GPU per process). cuda:N for a GPU that does
// not exist is an error naming how many there are and what the CUDA
// runtime reported. Throws nn::DeviceError.
std::vector<nn::Device> ResolveTrainerDevices(const std::string& spec);

// The GPU of the process with `local_rank` on its host, among the host's
// `usable` GPUs (indices): usable[local_rank]. Throws nn::DeviceError
// saying how many processes per host fit when there are too few.
nn::Device GpuOfLocalRank(int local_rank, const std::vector<int>& usable);

// --precision and --conv_algorithms for `devices`: sets nn's GPU settings;
// a value other than the default on CPU devices is a DeviceError (they
// compute in float32 and have no cuDNN).
void ApplyGpuFlags(const TrainerFlags& flags,
                   const std::vector<nn::Device>& devices);

// --backend=auto: nccl where every device is a different GPU and NCCL is
// built in (as DDP's default), else ring (CPU devices, or a GPU holding
// several replicas, which NCCL refuses). Any other name is kept.
std::string ResolveBackend(const std::string& flag,
                           const std::vector<nn::Device>& devices);

// Cores per device when --threads_per_device is 0: the machine's cores
// shared out (among the processes mpirun put on it, too), at least one.
int ThreadsPerDevice(int requested, int devices);

// The data set from --data_dir (or its defaults), cut to --limit and
// --test_limit images; with --validation, that share of the training images
// (chosen by --seed, at least one) moves to *validation, which may be null
// only without it. Throws data::DataError, std::invalid_argument.
data::FashionMnist LoadTrainerData(const TrainerFlags& flags,
                                   data::Split* validation = nullptr);

// Moves round(fraction x size) images of `train`, chosen by a shuffle
// seeded with `seed`, into a split of their own (both keep their order).
data::Split HoldOut(data::Split* train, double fraction, uint64_t seed);

// The one-line summary printed at start: "resnet_dp on [cpu:0, cpu:1]:
// backend ring, batch 512 (256 per device, scaled for 2 devices), lr 0.2
// (scaled for 2 devices), sgd (momentum 0, weight decay 0), constant
// schedule, fp32, 1 thread per device, 60000 training and 10000 test
// images, 10 epochs". `where` names the devices (TrainerJob::Where),
// `ranks` counts them over the job; the threads are left out when
// threads_per_device is 0 (GPU devices); `validation` is how many training
// images were held out.
std::string SetupLine(const std::string& program, const std::string& where,
                      int ranks, const std::string& backend,
                      const BatchAndLr& run, const TrainerFlags& flags,
                      int threads_per_device, const data::FashionMnist& data,
                      int64_t validation = 0);

// --params_out (when given): `state`'s model tensors with their names and
// shapes (parameter_file.h), written atomically.
void WriteTrainedParameters(const TrainerFlags& flags, const std::string& model,
                            const nn::NamedTensors& state);

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
