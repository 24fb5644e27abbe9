// The flags both trainers share, their range checks and what they set:
// the optimizer and the settings a resumed run must match.
#ifndef RINGLET_TRAINERS_COMMON_FLAGS_TRAINER_FLAGS_H_
#define RINGLET_TRAINERS_COMMON_FLAGS_TRAINER_FLAGS_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"
#include "collectives/api/types.h"
#include "nn/optim/optimizer.h"
#include "trainers/common/checkpoints/run_settings.h"

namespace ringlet::trainers {

struct TrainerFlags {
  std::string devices = "auto";
  std::string backend = "auto";     // See ResolveBackend.
  std::string precision = "fp32";   // fp32, tf32, bf16 (ApplyComputeFlags).
  std::string grad_dtype = "fp32";  // On the wire: fp32 or bf16.
  // GPUs: how cuDNN's convolution algorithms are chosen (ApplyComputeFlags).
  std::string conv_algorithms = "auto";
  // GPUs: the activations' memory format, nchw or nhwc (ApplyComputeFlags).
  std::string layout = "nchw";
  int epochs = 10;
  int64_t batch_size = 0;    // 0 (auto): see ResolveBatchAndLr.
  int accumulate_steps = 1;  // Batches per optimizer step.
  double lr = 0;             // 0 (auto): see ResolveBatchAndLr.
  uint64_t seed = 0;
  std::string dataset = "fashion_mnist";  // trainer_data.h lists them.
  std::string data_dir;
  // --input_layout: "nchw", or "nhwc" for npy/safetensors images saved
  // channels last (read channels first).
  std::string input_layout = "nchw";
  std::string augment;         // --augment: "", "crop", "flip" or "crop,flip".
  int crop_padding = -1;       // --crop_padding; -1: an eighth of the side.
  int threads_per_device = 0;  // 0: the machine's cores shared out.
  int64_t limit = 0;           // 0: every training image.
  double validation = 0;       // Share of the training images held out.
  int64_t eval_every = 0;      // Steps; 0: after each epoch only.
  // The epoch of the best validation accuracy in --params_out and
  // DIR/<program>.best.ckpt instead of the last.
  bool keep_best = false;
  int early_stop = 0;      // Epochs without a better validation acc; 0: off.
  int64_t test_limit = 0;  // 0: every test image.
  std::string metrics_out;
  std::string plot_out;
  std::string csv_out;
  std::string params_out;
  std::string params_in;          // Start from these parameters.
  bool eval_only = false;         // Evaluate --params_in, do not train.
  std::string predict;            // Inputs to run --params_in's model on.
  std::string predict_out;        // Its CSV; empty: standard output.
  std::string optimizer = "sgd";  // A registered one (nn/optim/registry.h).
  double momentum = 0;            // SGD as torch.optim.SGD; 0: d2l's plain SGD.
  double weight_decay = 0;
  // Adam's; left out, the chosen optimizer's own (lion's beta2: 0.99).
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::string lr_schedule = "constant";
  double warmup_epochs = 0;
  double clip_grad_norm = 0;            // 0: no clipping.
  std::string checkpoint_dir;           // Empty: no checkpoints.
  int checkpoint_every = 1;             // Epochs.
  int64_t checkpoint_steps = 0;         // Steps of the run; 0: only per epoch.
  std::string on_process_loss = "end";  // "end" or "regroup".
  bool resume = false;
  int64_t replica_check_every = 100;  // Steps; 0: never.
  // Queue step t + 1 before reading step t (LoopOptions::overlap_steps).
  bool overlap_steps = true;
  // The same parameters, bit for bit, on any number of devices and
  // processes: each batch cut into micro_shards (parallel/micro_shards.h).
  bool reproducible = false;
  int micro_shards = 0;  // 0: kDefaultMicroShards.
};

inline constexpr int kDefaultMicroShards = 8;

// The micro-shards the trainer cuts each batch into: 0 without
// --reproducible.
inline int MicroShardCount(const TrainerFlags& flags) {
  if (!flags.reproducible) return 0;
  return flags.micro_shards > 0 ? flags.micro_shards : kDefaultMicroShards;
}

// Adds the trainers' flags, with range checks, to `app`. `batch_default`
// and `lr_default` say in --help what auto means for --batch_size and --lr.
void AddTrainerFlags(CLI::App& app, TrainerFlags* flags, int default_epochs,
                     const std::string& batch_default,
                     const std::string& lr_default);

// A float as written (0.99, not 0.9900000095): what --beta2=0.99 gives.
double DecimalOf(float value);

// "adamw (betas 0.9, 0.999, eps 1e-08, weight decay 0)": the optimizer and
// the settings it reads (nn/optim/registry.h).
std::string OptimizerLine(const TrainerFlags& flags);

// Appends the training knobs (--momentum, --weight_decay, --lr_schedule,
// --warmup_epochs, --clip_grad_norm, --params_in) to `settings`: they
// change the trajectory, so a resumed run and every process must match.
void AddTrainingSettings(const TrainerFlags& flags, RunSettings* settings);

// The outputs the flags name (--metrics_out, --csv_out, --plot_out,
// --params_out, --checkpoint_dir), which every process of a job must be
// given alike: process 0 writes them, and one given to another process
// alone would be dropped.
RunSettings OutputSettings(const TrainerFlags& flags);

// The optimizer the flags name, at learning rate `lr`.
nn::OptimizerOptions OptimizerOf(const TrainerFlags& flags, double lr);

// --grad_dtype as the collectives' type (float32 or bfloat16).
collectives::DataType GradWireType(const TrainerFlags& flags);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_FLAGS_TRAINER_FLAGS_H_
