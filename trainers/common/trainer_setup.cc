#include "trainers/common/trainer_setup.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <iostream>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>

#include "cli/conventions.h"
#include "collectives/mpi/mpi_world.h"
#include "collectives/nccl.h"
#include "data/fashion_mnist.h"
#include "gpu/device_probe.h"
#include "nlohmann/json.hpp"
#include "nn/gpu_precision.h"
#include "trainers/common/checkpoint.h"
#include "trainers/common/job.h"
#include "trainers/common/output_files.h"
#include "trainers/common/parameter_file.h"
#include "trainers/common/progress.h"

namespace ringlet::trainers {

namespace {

// "must be a number above 0" for anything else, as one short line (CLI11's
// PositiveNumber prints the whole range of a double). inf and nan are not
// numbers a run can use (--lr=inf trained on NaN). With `auto_ok`, "auto"
// reads as 0: the trainer's default.
CLI::Validator Positive(bool auto_ok) {
  return CLI::Validator(
      [auto_ok](std::string& text) -> std::string {
        if (auto_ok && text == "auto") {
          text = "0";
          return "";
        }
        try {
          size_t used = 0;
          const double v = std::stod(text, &used);
          if (v > 0 && std::isfinite(v) && used == text.size()) return "";
        } catch (const std::exception&) {
        }
        return std::string("must be ") + (auto_ok ? "auto or " : "") +
               "a finite number above 0, got '" + text + "'";
      },
      "");
}

// A whole number in [min, max], checked before CLI11 converts it (whose
// own message for --epochs=1.5 was "At Most 1 required but received 2").
// With `auto_ok`, "auto" reads as 0: the trainer's default.
CLI::Validator WholeNumber(int64_t min, int64_t max, bool auto_ok = false) {
  return CLI::Validator(
      [min, max, auto_ok](std::string& text) -> std::string {
        if (auto_ok && text == "auto") {
          text = "0";
          return "";
        }
        const std::string range =
            (auto_ok ? "auto or a whole number " : "a whole number ") +
            (min == 0 ? std::string("0 or more")
                      : "above " + std::to_string(min - 1));
        try {
          size_t used = 0;
          const long long v = std::stoll(text, &used);
          if (used == text.size() && v >= min && v <= max) return "";
          if (used == text.size() && v > max) {
            return "must be at most " + std::to_string(max) + ", got '" + text +
                   "'";
          }
        } catch (const std::out_of_range&) {
          return "must be " + range + " and at most " + std::to_string(max) +
                 ", got '" + text + "'";
        } catch (const std::exception&) {
        }
        return "must be " + range + ", got '" + text + "'";
      },
      "");
}

// --devices: the forms ResolveDevices reads (whether the GPUs exist is
// checked later, against the machine).
const CLI::Validator kDeviceSpec(
    [](std::string& text) -> std::string {
      if (text == "auto") return "";
      try {
        // As if every index named a GPU (ParseIndex reads up to 6 digits).
        nn::ResolveDevices(text, /*usable_gpus=*/1000000);
        return "";
      } catch (const nn::DeviceError& e) {
        return e.what();
      }
    },
    "");

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

// One line to stderr in one write, so the lines of processes sharing a
// terminal under mpirun do not interleave.
void PrintLine(const std::string& text) {
  const std::string line = text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

// Set by the first SIGINT or SIGTERM; the loop stops after its step.
volatile std::sig_atomic_t stop_signal = 0;

void RecordStop(int signal) {
  stop_signal = signal;
  // A second signal ends the program at once.
  std::signal(signal, SIG_DFL);
}

// A number in [min, max) (max: none when infinite), as one short line.
CLI::Validator RealIn(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        try {
          size_t used = 0;
          const double v = std::stod(text, &used);
          if (used == text.size() && v >= min && v < max) return "";
        } catch (const std::exception&) {
        }
        char range[64];
        if (std::isinf(max)) {
          std::snprintf(range, sizeof(range), "%g or more", min);
        } else {
          std::snprintf(range, sizeof(range), "at least %g and below %g", min,
                        max);
        }
        return "must be a number " + std::string(range) + ", got '" + text +
               "'";
      },
      "");
}

}  // namespace

void AddTrainerFlags(CLI::App& app, TrainerFlags* f, int default_epochs,
                     const std::string& batch_default,
                     const std::string& lr_default) {
  f->epochs = default_epochs;
  cli::UseConventions(app);
  app.add_option("--devices", f->devices,
                 "auto (every GPU, else one CPU device); cpu:K (K CPU "
                 "devices: cpu:2 is cpu:0 and cpu:1) or cpu:I,J (those CPU "
                 "devices); cuda:I,J,... (those GPUs, by index; a GPU may "
                 "repeat)")
      ->check(kDeviceSpec)
      ->capture_default_str();
  app.add_option("--backend", f->backend,
                 "how gradients are summed: ring, naive or nccl (under "
                 "mpirun also mpi); auto: nccl when every device is its own "
                 "GPU, else ring")
      ->check(CLI::IsMember({"auto", "ring", "naive", "nccl", "mpi"}))
      ->capture_default_str();
  app.add_option("--epochs", f->epochs, "passes over the training set")
      ->check(WholeNumber(1, kMaxInt))
      ->capture_default_str();
  app.add_option(
         "--batch_size", f->batch_size,
         "images per step over all devices, as given; auto: " + batch_default)
      ->type_name("INT")
      ->transform(WholeNumber(1, kMaxInt64, /*auto_ok=*/true))
      ->default_str("auto");
  app.add_option("--accumulate_steps", f->accumulate_steps,
                 "batches per optimizer step: their gradients are added up "
                 "and summed across devices once (DDP's no_sync), a step of "
                 "batch_size x this many images")
      ->check(WholeNumber(1, kMaxInt))
      ->capture_default_str();
  app.add_option("--lr", f->lr, "learning rate, as given; auto: " + lr_default)
      ->type_name("NUMBER")
      ->transform(Positive(/*auto_ok=*/true))
      ->default_str("auto");
  app.add_option("--optimizer", f->optimizer,
                 "sgd (torch.optim.SGD; the chapters'), adam or adamw "
                 "(torch.optim.Adam, AdamW)")
      ->check(CLI::IsMember(nn::OptimizerNames()))
      ->capture_default_str();
  app.add_option("--momentum", f->momentum,
                 "SGD momentum, as torch.optim.SGD (0: the chapter's plain "
                 "SGD)")
      ->check(RealIn(0, 1));
  app.add_option("--weight_decay", f->weight_decay,
                 "sgd, adam: L2 penalty added to each gradient; adamw: the "
                 "decoupled decay (as torch.optim's)")
      ->check(RealIn(0, 1));
  app.add_option("--beta1", f->beta1,
                 "adam, adamw: decay of the gradient's running mean")
      ->check(RealIn(0, 1))
      ->capture_default_str();
  app.add_option("--beta2", f->beta2,
                 "adam, adamw: decay of the squared gradient's running mean")
      ->check(RealIn(0, 1))
      ->capture_default_str();
  app.add_option("--eps", f->eps, "adam, adamw: added to the denominator")
      ->check(Positive(/*auto_ok=*/false))
      ->capture_default_str();
  app.add_option("--lr_schedule", f->lr_schedule,
                 "constant; step (x0.1 from half way, x0.01 from three "
                 "quarters); or cosine (to 0 at the end)")
      ->check(CLI::IsMember({"constant", "step", "cosine"}));
  app.add_option("--warmup_epochs", f->warmup_epochs,
                 "raise the rate linearly from lr/steps to lr over this many "
                 "epochs first (the linear-scaling rule's warmup for large "
                 "batches)")
      ->check(RealIn(0, std::numeric_limits<double>::infinity()));
  app.add_option("--clip_grad_norm", f->clip_grad_norm,
                 "clip the batch's mean gradient to this global L2 norm "
                 "(0: no clipping)")
      ->check(RealIn(0, std::numeric_limits<double>::infinity()));
  app.add_option("--precision", f->precision,
                 "on GPUs: fp32 (convolutions and matrix products without "
                 "TF32) or tf32 (tensor cores, as PyTorch's allow_tf32)")
      ->check(CLI::IsMember({"fp32", "tf32"}))
      ->capture_default_str();
  app.add_option("--conv_algorithms", f->conv_algorithms,
                 "on GPUs: measure (time cuDNN's candidates once per shape, "
                 "keep the fastest), heuristic (cuDNN's first guess) or "
                 "deterministic (the fastest giving the same bits every run) "
                 "or graph (cuDNN's graph-API engines, timed once per shape)")
      ->check(CLI::IsMember({"measure", "heuristic", "deterministic", "graph"}))
      ->capture_default_str();
  app.add_option("--seed", f->seed,
                 "initial weights and the order of the batches")
      ->capture_default_str();
  app.add_option("--data_dir", f->data_dir,
                 "Fashion-MNIST folder (default: $FASHION_MNIST_DIR, else " +
                     std::string(data::kDefaultFashionMnistDir) + ")");
  app.add_option("--threads_per_device", f->threads_per_device,
                 "cores each device's ops use (0: the machine's cores shared "
                 "out)")
      ->check(WholeNumber(0, 1024));
  app.add_option("--limit", f->limit,
                 "train on the first N training images only (quick runs; 0: "
                 "all)")
      ->check(WholeNumber(0, kMaxInt64));
  app.add_option("--validation", f->validation,
                 "hold out this share of the training images (chosen by "
                 "--seed) and report their accuracy after each epoch (0: "
                 "none)")
      ->check(RealIn(0, 1))
      ->capture_default_str();
  app.add_option("--eval_every", f->eval_every,
                 "also evaluate every N optimizer steps, on the held-out "
                 "images (else the test set), logged as a line and in the "
                 "metrics (0: after each epoch only)")
      ->check(WholeNumber(0, kMaxInt64))
      ->capture_default_str();
  app.add_option("--test_limit", f->test_limit,
                 "evaluate on the first N test images only (0: all)")
      ->check(WholeNumber(0, kMaxInt64));
  app.add_option("--metrics_out", f->metrics_out,
                 "write one JSON line per epoch to this file");
  app.add_option("--plot_out", f->plot_out,
                 "draw loss and accuracies per epoch into this SVG file");
  app.add_option("--csv_out", f->csv_out,
                 "write one CSV row per epoch to this file");
  app.add_option("--params_out", f->params_out,
                 "write the trained parameters and batch-norm statistics to "
                 "this file (names, shapes, float32 values, checksum; "
                 "--params_in reads it)");
  app.add_option("--params_in", f->params_in,
                 "start from the parameters in this file (--params_out's, or "
                 "a checkpoint)");
  app.add_flag("--eval_only", f->eval_only,
               "evaluate --params_in on the test set and exit, no training");
  app.add_option("--checkpoint_dir", f->checkpoint_dir,
                 "write a checkpoint (parameters, batch-norm statistics, "
                 "optimizer state, position, metrics) to DIR/<program>.ckpt "
                 "every --checkpoint_every epochs, after the last one, and on "
                 "SIGINT or SIGTERM (made if missing)");
  app.add_option("--checkpoint_every", f->checkpoint_every,
                 "epochs between checkpoints")
      ->check(WholeNumber(1, kMaxInt))
      ->capture_default_str();
  app.add_flag("--resume", f->resume,
               "continue from the checkpoint in --checkpoint_dir, as if the "
               "run had never stopped (also on another number of devices)");
  app.add_option("--replica_check_every", f->replica_check_every,
                 "steps between comparisons of the replicas' parameters "
                 "(a 64-bit checksum each; 0: never)")
      ->check(WholeNumber(0, kMaxInt64))
      ->capture_default_str();
  app.add_option("--overlap_steps", f->overlap_steps,
                 "queue each step before reading the last one's loss, so a "
                 "GPU computes while the host prepares the next batch; "
                 "false waits for every step (to measure what it buys)")
      ->capture_default_str();
}

std::string CheckpointPath(const TrainerFlags& flags,
                           const std::string& program) {
  if (flags.checkpoint_dir.empty()) return "";
  return ResolveUserPath(flags.checkpoint_dir) + "/" + program + ".ckpt";
}

void CheckTrainerOutputs(const TrainerFlags& flags,
                         const std::string& program) {
  if (flags.eval_only && flags.params_in.empty()) {
    throw std::runtime_error(
        "--eval_only needs --params_in: the parameters to evaluate");
  }
  if (flags.resume && !flags.params_in.empty()) {
    throw std::runtime_error(
        "--resume and --params_in both set the parameters; give one");
  }
  if (flags.resume && flags.checkpoint_dir.empty()) {
    throw std::runtime_error(
        "--resume needs --checkpoint_dir: the folder holding the checkpoint");
  }
  if (!flags.checkpoint_dir.empty()) {
    const std::string dir = ResolveUserPath(flags.checkpoint_dir);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      throw std::runtime_error("--checkpoint_dir: cannot make " + dir + " (" +
                               std::strerror(errno) +
                               "); check that its parent folder exists");
    }
  }
  CheckOutputFiles({{"--metrics_out", ResolveUserPath(flags.metrics_out)},
                    {"--csv_out", ResolveUserPath(flags.csv_out)},
                    {"--plot_out", ResolveUserPath(flags.plot_out)},
                    {"--params_out", ResolveUserPath(flags.params_out)},
                    {"--checkpoint_dir", CheckpointPath(flags, program)}});
}

LoopOptions TrainerLoopOptions(const TrainerFlags& flags,
                               const std::string& program,
                               const TrainerJob& job, const std::string& where,
                               const BatchAndLr& run,
                               const RunSettings& settings,
                               std::shared_ptr<const Checkpoint> resume) {
  LoopOptions loop;
  loop.schedule.kind = flags.lr_schedule;
  loop.schedule.base_lr = run.lr;
  loop.schedule.warmup_epochs = flags.warmup_epochs;
  loop.epochs = flags.epochs;
  loop.batch_size = run.batch_size;
  loop.accumulate_steps = flags.accumulate_steps;
  loop.seed = flags.seed;
  // mpirun hands processes a pseudo-terminal even when its own output is
  // a log, so a job of several processes logs plain lines.
  loop.terminal = IsTerminal(2) && job.num_processes == 1;
  loop.where = where;
  loop.plot_title = program + " on " + where;
  loop.settings = settings;
  loop.replica_check_every = flags.replica_check_every;
  loop.eval_every = flags.eval_every;
  loop.overlap_steps = flags.overlap_steps;
  loop.checkpoint_every = flags.checkpoint_every;
  if (resume != nullptr) {
    loop.resume_path = CheckpointPath(flags, program);
    loop.resume = std::move(resume);
  }
  if (job.leader()) {
    loop.metrics_out = ResolveUserPath(flags.metrics_out);
    loop.run_line = RunLine(where, settings, loop.resume_path);
    loop.csv_out = ResolveUserPath(flags.csv_out);
    loop.plot_out = ResolveUserPath(flags.plot_out);
    loop.checkpoint_path = CheckpointPath(flags, program);
  }
  if (!flags.checkpoint_dir.empty() && job.num_processes == 1) {
    std::signal(SIGINT, RecordStop);
    std::signal(SIGTERM, RecordStop);
    loop.stop = &stop_signal;
  }
  return loop;
}

void WriteTrainedParameters(const TrainerFlags& flags, const std::string& model,
                            const nn::NamedTensors& state) {
  if (flags.params_out.empty()) return;
  WriteParameterFile(ResolveUserPath(flags.params_out), model, state);
}

nn::OptimizerOptions OptimizerOf(const TrainerFlags& flags, double lr) {
  nn::OptimizerOptions o;
  o.name = flags.optimizer;
  o.lr = static_cast<float>(lr);
  o.momentum = static_cast<float>(flags.momentum);
  o.weight_decay = static_cast<float>(flags.weight_decay);
  o.beta1 = static_cast<float>(flags.beta1);
  o.beta2 = static_cast<float>(flags.beta2);
  o.eps = static_cast<float>(flags.eps);
  return o;
}

void AddTrainingSettings(const TrainerFlags& flags, RunSettings* settings) {
  const auto number = FormatNumber;
  settings->push_back(
      {"accumulate_steps", std::to_string(flags.accumulate_steps), true});
  settings->push_back({"optimizer", flags.optimizer, true});
  if (flags.optimizer != "sgd") {
    settings->push_back({"beta1", number(flags.beta1), true});
    settings->push_back({"beta2", number(flags.beta2), true});
    settings->push_back({"eps", number(flags.eps), true});
  }
  settings->push_back({"momentum", number(flags.momentum), true});
  settings->push_back({"weight_decay", number(flags.weight_decay), true});
  settings->push_back({"lr_schedule", flags.lr_schedule, true});
  settings->push_back({"warmup_epochs", number(flags.warmup_epochs), true});
  settings->push_back({"clip_grad_norm", number(flags.clip_grad_norm), true});
  settings->push_back({"params_in", flags.params_in, false});
  settings->push_back({"precision", flags.precision, false});
  settings->push_back({"conv_algorithms", flags.conv_algorithms, false});
  settings->push_back(
      {"overlap_steps", flags.overlap_steps ? "true" : "false", false});
}

std::string RunLine(const std::string& where, const RunSettings& settings,
                    const std::string& resumed_from) {
  nlohmann::ordered_json run = {{"started", UtcNow()}, {"devices", where}};
  if (!resumed_from.empty()) run["resumed_from"] = resumed_from;
  for (const Setting& s : settings) run[s.name] = s.value;
  return nlohmann::ordered_json({{"run", run}}).dump();
}

std::shared_ptr<const Checkpoint> ReadResumeCheckpoint(
    const TrainerFlags& flags, const std::string& program) {
  if (!flags.resume) return nullptr;
  // Every process reads the checkpoint process 0 wrote (one host, or a
  // shared folder).
  return std::make_shared<const Checkpoint>(
      ReadCheckpoint(CheckpointPath(flags, program)));
}

BatchAndLr ResolveBatchAndLr(const TrainerFlags& flags,
                             const TrainerDefaults& defaults, int ranks,
                             const Checkpoint* resume) {
  const std::string scaled = "scaled for " + std::to_string(ranks) + " devices";
  BatchAndLr out;
  auto saved = [&](const char* name) -> const Setting* {
    return resume != nullptr ? FindSetting(resume->settings, name) : nullptr;
  };
  // A checkpoint's number, or a clear error for one that is not.
  auto number = [](const Setting& s) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s.value, &used);
    } catch (const std::exception&) {
    }
    if (used != s.value.size() || !(v > 0) || !std::isfinite(v)) {
      throw CheckpointError("the checkpoint records " + s.name + " '" +
                            s.value + "', not a number above 0; give --" +
                            s.name);
    }
    return v;
  };
  if (flags.batch_size > 0) {
    out.batch_size = flags.batch_size;
  } else if (const Setting* s = saved("batch_size")) {
    out.batch_size = static_cast<int64_t>(number(*s));
    out.batch_note = "the checkpoint's";
  } else {
    const int scale = defaults.per_device ? ranks : 1;
    out.batch_size = defaults.batch_size * scale;
    if (scale > 1) out.batch_note = scaled;
  }
  if (flags.lr > 0) {
    out.lr = flags.lr;
  } else if (const Setting* s = saved("lr")) {
    out.lr = number(*s);
    out.lr_note = "the checkpoint's";
  } else if (flags.optimizer != "sgd") {
    out.lr = 0.001;
    out.lr_note = "torch's default for " + flags.optimizer;
  } else {
    const int scale = defaults.per_device ? ranks : 1;
    out.lr = defaults.lr * scale;
    if (scale > 1) out.lr_note = scaled;
  }
  return out;
}

bool LoadParamsAndMaybeEvaluate(const TrainerFlags& flags,
                                ParallelTrainer& trainer,
                                const std::string& model,
                                const data::Split& test, int64_t batch_size,
                                const std::string& where, bool terminal,
                                std::ostream& out, std::ostream& progress) {
  if (!flags.params_in.empty()) {
    LoadParameterFile(trainer, ResolveUserPath(flags.params_in), model);
  }
  if (!flags.eval_only) return false;
  const auto start = std::chrono::steady_clock::now();
  ProgressBar bar(progress, terminal, "eval", test.size());
  double accuracy = 0;
  try {
    accuracy = EvaluateAccuracy(trainer, test, batch_size, &bar);
  } catch (const std::bad_alloc& e) {
    ThrowOutOfMemory(e, batch_size, trainer.num_devices());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  char line[160];
  std::snprintf(line, sizeof(line),
                "test acc: %.3f on %lld images in %.1f s on ", accuracy,
                static_cast<long long>(test.size()), seconds);
  out << line << where << std::endl;
  return true;
}

nn::Device GpuOfLocalRank(int local_rank, const std::vector<int>& usable) {
  if (local_rank < 0 || local_rank >= static_cast<int>(usable.size())) {
    std::string names;
    for (size_t i = 0; i < usable.size(); ++i) {
      names += (i ? ", cuda:" : "cuda:") + std::to_string(usable[i]);
    }
    throw nn::DeviceError(
        "--devices=auto under mpirun gives each process the GPU of its local "
        "rank, but this process has local rank " +
        std::to_string(local_rank) + " and its host " +
        std::to_string(usable.size()) + " usable GPU(s) (" + names +
        "); start at most " + std::to_string(usable.size()) +
        " processes per host (mpirun --map-by ppr:" +
        std::to_string(usable.size()) +
        ":node), or name the devices (--devices=cuda:0, --devices=cpu:1)");
  }
  return nn::Device::Cuda(usable[local_rank]);
}

std::vector<nn::Device> ResolveTrainerDevices(const std::string& spec) {
  const gpu::CudaDeviceReport gpus = gpu::ProbeCudaDevices();
  const int usable = static_cast<int>(gpus.usable.size());
  if (spec == "auto" && usable > 0 && collectives::mpi::LaunchedByMpirun()) {
    // One GPU per process, as torchrun's LOCAL_RANK.
    const char* local_rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    return {
        GpuOfLocalRank(local_rank ? std::atoi(local_rank) : 0, gpus.usable)};
  }
  if (usable == 0 && spec.rfind("cuda", 0) == 0) {
    // No GPU at all: say why, in the runtime's words too.
    throw nn::DeviceError("--devices=" + spec + ": " + gpus.reason +
                          "; use --devices=cpu:2 or --devices=auto");
  }
  return nn::ResolveDevices(spec, usable);
}

void ApplyGpuFlags(const TrainerFlags& flags,
                   const std::vector<nn::Device>& devices) {
  const nn::GpuPrecision precision = nn::ParseGpuPrecision(flags.precision);
  const nn::ConvAlgorithms conv =
      nn::ParseConvAlgorithms(flags.conv_algorithms);
  const bool on_gpus = devices.front().is_cuda();
  if (precision != nn::GpuPrecision::kFp32 && !on_gpus) {
    throw nn::DeviceError("--precision=" + flags.precision +
                          " applies to GPUs; CPU devices compute in float32 "
                          "(leave --precision out)");
  }
  if (conv != nn::ConvAlgorithms::kMeasure && !on_gpus) {
    throw nn::DeviceError("--conv_algorithms=" + flags.conv_algorithms +
                          " applies to GPUs (cuDNN); CPU devices always give "
                          "the same bits (leave --conv_algorithms out)");
  }
  nn::SetGpuPrecision(precision);
  nn::SetConvAlgorithms(conv);
}

std::string ResolveBackend(const std::string& flag,
                           const std::vector<nn::Device>& devices) {
  if (flag != "auto") return flag;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].is_cuda()) return "ring";
    for (size_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) return "ring";
    }
  }
  return collectives::NcclCompiledIn() ? "nccl" : "ring";
}

int ThreadsPerDevice(int requested, int devices) {
  if (requested > 0) return requested;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  // Processes mpirun started on this host share its cores.
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int processes = local_size ? std::max(1, std::atoi(local_size)) : 1;
  return std::max(1, cores / std::max(1, devices * processes));
}

namespace {

void Truncate(data::Split* split, int64_t limit) {
  if (limit <= 0 || limit >= split->size()) return;
  split->labels.resize(limit);
  split->pixels.resize(limit * data::kImagePixels);
}

}  // namespace

data::Split HoldOut(data::Split* train, double fraction, uint64_t seed) {
  const int64_t n = train->size();
  const int64_t held = std::llround(fraction * static_cast<double>(n));
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(),
               std::mt19937_64(seed ^ 0x76616c6964ull));  // "valid"
  std::vector<bool> is_held(n, false);
  for (int64_t i = 0; i < held; ++i) is_held[order[i]] = true;
  data::Split kept, out;
  kept.name = train->name;
  out.name = "validation";
  for (int64_t i = 0; i < n; ++i) {
    data::Split& to = is_held[i] ? out : kept;
    to.labels.push_back(train->labels[i]);
    to.pixels.insert(to.pixels.end(), train->image(i),
                     train->image(i) + data::kImagePixels);
  }
  *train = std::move(kept);
  return out;
}

data::FashionMnist LoadTrainerData(const TrainerFlags& flags,
                                   data::Split* validation) {
  data::FashionMnist data =
      data::LoadFashionMnist(data::ResolveFashionMnistDir(flags.data_dir));
  Truncate(&data.train, flags.limit);
  Truncate(&data.test, flags.test_limit);
  if (flags.validation > 0) {
    if (validation == nullptr) {
      throw std::invalid_argument("--validation: this program holds none out");
    }
    *validation = HoldOut(&data.train, flags.validation, flags.seed);
    if (validation->size() == 0 || data.train.size() == 0) {
      throw std::invalid_argument(
          "--validation=" + FormatNumber(flags.validation) + " of " +
          std::to_string(data.train.size() + validation->size()) +
          " training images leaves " +
          (validation->size() == 0 ? "none held out" : "none to train on") +
          "; use a larger share, a smaller one or a larger --limit");
    }
  }
  return data;
}

std::string SetupLine(const std::string& program, const std::string& where,
                      int n, const std::string& backend, const BatchAndLr& run,
                      const TrainerFlags& flags, int threads_per_device,
                      const data::FashionMnist& data, int64_t validation) {
  const int64_t batch = run.batch_size;
  std::string line = program + " on " + where + ": backend " + backend +
                     ", batch " + std::to_string(batch);
  std::string batch_notes;
  if (n > 1) {
    batch_notes = std::to_string(batch / n) +
                  (batch % n ? "-" + std::to_string(batch / n + 1) : "") +
                  " per device";
  }
  if (!run.batch_note.empty()) {
    batch_notes += (batch_notes.empty() ? "" : ", ") + run.batch_note;
  }
  if (!batch_notes.empty()) line += " (" + batch_notes + ")";
  if (flags.accumulate_steps > 1) {
    line += " x " + std::to_string(flags.accumulate_steps) +
            " accumulated per step";
  }
  line += ", lr " + FormatNumber(run.lr);
  if (!run.lr_note.empty()) line += " (" + run.lr_note + ")";
  if (flags.optimizer == "sgd") {
    line += ", sgd (momentum " + FormatNumber(flags.momentum) +
            ", weight decay " + FormatNumber(flags.weight_decay) + ")";
  } else {
    line += ", " + flags.optimizer + " (betas " + FormatNumber(flags.beta1) +
            ", " + FormatNumber(flags.beta2) + ", eps " +
            FormatNumber(flags.eps) + ", weight decay " +
            FormatNumber(flags.weight_decay) + ")";
  }
  line += ", " + flags.lr_schedule + " schedule";
  if (flags.warmup_epochs > 0) {
    line += " (warmup " + FormatNumber(flags.warmup_epochs) + " epochs)";
  }
  if (flags.clip_grad_norm > 0) {
    line += ", clip grad norm " + FormatNumber(flags.clip_grad_norm);
  }
  line += ", " + flags.precision + ", ";
  if (threads_per_device > 0) {  // CPU devices; GPUs use no op threads.
    line += std::to_string(threads_per_device) + " thread" +
            (threads_per_device == 1 ? "" : "s") + " per device, ";
  }
  const int epochs = flags.epochs;
  line += std::to_string(data.train.size()) + " training ";
  if (validation > 0) {
    line += "(" + std::to_string(validation) + " held out for validation) ";
  }
  line += "and " + std::to_string(data.test.size()) + " test images, " +
          std::to_string(epochs) + " epoch" + (epochs == 1 ? "" : "s");
  return line;
}

int RunTrainerMain(CLI::App& app, int argc, char** argv,
                   const std::function<int()>& body) {
  const int parsed = cli::ParseFlags(app, argc, argv);
  if (parsed >= 0) return parsed;
  try {
    return body();
  } catch (const TrainingInterrupted& e) {
    std::cout.flush();
    PrintLine(app.get_name() + ": " + e.what());
    EndJob(128 + e.signal());
  } catch (const ProcessesDisagree& e) {
    // Every process found the same difference at the same point: each
    // says so and ends on its own, no abort needed.
    std::cout.flush();
    PrintLine(app.get_name() + ": error" + JobErrorContext() + ": " + e.what());
    std::exit(1);
  } catch (const std::exception& e) {
    std::cout.flush();
    PrintLine(app.get_name() + ": error" + JobErrorContext() + ": " + e.what());
    // Under mpirun the other processes are ended too, not left waiting.
    EndJob(1);
  } catch (...) {
    std::cout.flush();
    PrintLine(app.get_name() + ": error" + JobErrorContext() +
              ": an exception that is not a std::exception (a bug: please "
              "report it)");
    EndJob(1);
  }
}

}  // namespace ringlet::trainers
