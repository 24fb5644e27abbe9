#include "trainers/common/flags/trainer_flags.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>

#include "cli/conventions.h"
#include "collectives/backends/registry.h"
#include "data/fashion_mnist.h"
#include "data/transforms.h"
#include "nn/device.h"
#include "nn/optim/registry.h"
#include "trainers/common/outputs/metrics.h"

namespace ringlet::trainers {
namespace {

// "must be a number above 0" for anything else, as one short line (CLI11's
// PositiveNumber prints the whole range of a double). inf and nan are not
// numbers a run can use (--lr=inf would train on NaN), nor is what float32,
// the optimizers' type, cannot hold (1e308 became inf, 1e-50 zero). With
// `auto_ok`, "auto" reads as 0: the trainer's default.
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
          if (used == text.size() && v >= FLT_MIN && v <= FLT_MAX) return "";
          if (used == text.size() && v > 0 && std::isfinite(v)) {
            return "must be a number float32 holds, from 1.2e-38 to 3.4e38, "
                   "got '" +
                   text + "'";
          }
        } catch (const std::exception&) {
        }
        return std::string("must be ") + (auto_ok ? "auto or " : "") +
               "a finite number above 0, got '" + text + "'";
      },
      "");
}

// A whole number in [min, max], checked before CLI11 converts it (whose
// own message for --epochs=1.5 is "At Most 1 required but received 2").
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

// "; read by adam (default 0.999), lion (0.99)": who reads an optimizer
// setting, and its own default, from the registry (nn/optim/registry.h).
std::string ReadBy(const std::string& setting) {
  std::string out;
  for (const nn::OptimizerSpec* spec : nn::RegisteredOptimizers()) {
    float value = 0;
    if (!nn::Reads(*spec, setting, &value)) continue;
    out += (out.empty() ? "; read by " : ", ") + spec->name + " (" +
           (out.empty() ? "default " : "") + FormatNumber(DecimalOf(value)) +
           ")";
  }
  return out.empty() ? "; read by no optimizer" : out;
}

// The devices, their backend, and each step's size and rate.
void AddDeviceAndStepFlags(CLI::App& app, TrainerFlags* f,
                           const std::string& batch_default,
                           const std::string& lr_default) {
  app.add_option("--devices", f->devices,
                 "auto (every GPU, else one CPU device); cpu:K (K CPU "
                 "devices: cpu:2 is cpu:0 and cpu:1) or cpu:I,J (those CPU "
                 "devices); cuda:I,J,... (those GPUs, by index; a GPU may "
                 "repeat)")
      ->check(kDeviceSpec)
      ->capture_default_str();
  std::vector<std::string> backends = {"auto"};
  std::string summaries;
  for (const collectives::BackendSpec* spec :
       collectives::RegisteredBackends()) {
    backends.push_back(spec->name);
    summaries += "; " + spec->summary;
  }
  app.add_option("--backend", f->backend,
                 "how gradients are summed: auto (nccl when every device is "
                 "its own GPU, else ring)" +
                     summaries)
      ->check(CLI::IsMember(backends))
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
}

// The optimizer and what shapes its steps: schedule, warmup, clipping.
void AddOptimizerFlags(CLI::App& app, TrainerFlags* f) {
  std::string summaries;
  for (const nn::OptimizerSpec* spec : nn::RegisteredOptimizers()) {
    summaries += (summaries.empty() ? "" : "; ") + spec->summary;
  }
  app.add_option("--optimizer", f->optimizer, summaries)
      ->check(CLI::IsMember(nn::OptimizerNames()))
      ->capture_default_str();
  app.add_option("--momentum", f->momentum,
                 "SGD momentum, as torch.optim.SGD (0: the chapter's plain "
                 "SGD)" +
                     ReadBy("momentum"))
      ->check(cli::RealIn(0, 1));
  std::string decays;
  for (const nn::OptimizerSpec* spec : nn::RegisteredOptimizers()) {
    decays +=
        (decays.empty() ? "" : "; ") + spec->name + ": " + spec->weight_decay;
  }
  app.add_option("--weight_decay", f->weight_decay, decays)
      ->check(cli::RealIn(0, 1));
  app.add_option("--beta1", f->beta1,
                 "decay of the gradient's running mean" + ReadBy("beta1"))
      ->check(cli::RealIn(0, 1))
      ->capture_default_str();
  app.add_option("--beta2", f->beta2,
                 "decay of the optimizer's second running average (Adam's "
                 "squared gradients)" +
                     ReadBy("beta2"))
      ->check(cli::RealIn(0, 1))
      ->capture_default_str();
  app.add_option("--eps", f->eps, "added to the denominator" + ReadBy("eps"))
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
      ->check(cli::RealIn(0, std::numeric_limits<double>::infinity()));
  app.add_option("--clip_grad_norm", f->clip_grad_norm,
                 "clip the batch's mean gradient to this global L2 norm "
                 "(0: no clipping)")
      ->check(cli::RealIn(0, std::numeric_limits<double>::infinity()));
}

// How the devices compute and send: precision, the wire, cuDNN's choices.
void AddComputeFlags(CLI::App& app, TrainerFlags* f) {
  app.add_option("--precision", f->precision,
                 "fp32; tf32 on GPUs (tensor cores, as PyTorch's "
                 "allow_tf32); or bf16, mixed precision as torch.autocast "
                 "(convolutions and matrix products in bfloat16, losses, "
                 "statistics and weights in float32; GPUs, and CPUs with "
                 "AVX512_BF16 or AMX)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  app.add_option("--grad_dtype", f->grad_dtype,
                 "the gradients' type on the wire between devices: fp32, or "
                 "bf16 (half the bytes: cast once, summed with one rounding "
                 "per step, cast back, as DDP's bf16 hook)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app.add_option("--conv_algorithms", f->conv_algorithms,
                 "on GPUs: measure (time cuDNN's candidates once per shape, "
                 "keep the fastest), heuristic (cuDNN's first guess), "
                 "deterministic (cuDNN's first guess giving the same bits "
                 "every run), graph (cuDNN's graph-API engines, timed once "
                 "per shape), or auto: graph with --precision=bf16, measure "
                 "otherwise (the faster on an H100)")
      ->check(CLI::IsMember(
          {"auto", "measure", "heuristic", "deterministic", "graph"}))
      ->capture_default_str();
  app.add_option("--layout", f->layout,
                 "on GPUs: the activations' memory format, nchw or nhwc "
                 "(channels-last, as PyTorch's channels_last: what cuDNN's "
                 "tensor-core kernels read); chosen once, at the first "
                 "convolution")
      ->check(CLI::IsMember({"nchw", "nhwc"}))
      ->capture_default_str();
}

// What to train on: the seed, the data set, augmentation.
void AddDataFlags(CLI::App& app, TrainerFlags* f) {
  app.add_option("--seed", f->seed,
                 "initial weights and the order of the batches")
      ->check(cli::Unsigned64())
      ->capture_default_str();
  app.add_option("--dataset", f->dataset,
                 "what to train on: fashion_mnist, mnist, cifar10, cifar100, "
                 "npy (a folder of train_inputs.npy, train_targets.npy, "
                 "test_inputs.npy, test_targets.npy, or an .npz file of "
                 "them), safetensors (a file of those four tensors) or "
                 "image_folder (train/ and test/ folders of class folders of "
                 "PNG or JPEG images, as torchvision's ImageFolder); targets "
                 "are class ids")
      ->check(CLI::IsMember({"fashion_mnist", "mnist", "cifar10", "cifar100",
                             "npy", "safetensors", "image_folder"}))
      ->capture_default_str();
  app.add_option("--augment", f->augment,
                 "augment the training images: crop (padded by an eighth of "
                 "the side, 4 for 28x28 and 32x32, or --crop_padding; a "
                 "random window, as torchvision's RandomCrop), flip (left to "
                 "right "
                 "at p = 0.5), or crop,flip; the same on any number of "
                 "devices and processes (default: none, as the chapters)")
      ->check(CLI::Validator(
          [](const std::string& names) -> std::string {
            try {
              data::AugmentationsNamed(names);
            } catch (const std::invalid_argument& e) {
              return e.what();
            }
            return "";
          },
          "crop|flip|crop,flip"));
  app.add_option("--crop_padding", f->crop_padding,
                 "with --augment=crop: zeros padded on each side before the "
                 "window is taken; auto: an eighth of the image's side")
      ->type_name("INT")
      ->transform(CLI::Validator(
          [](std::string& text) -> std::string {
            if (text == "auto") {
              text = "-1";  // TrainerFlags::crop_padding's "auto".
              return "";
            }
            std::string plain = text;
            return WholeNumber(0, 1 << 20)(plain);
          },
          "auto|INT"))
      ->default_str("auto");
  app.add_option("--data_dir", f->data_dir,
                 "the data set's folder (Fashion-MNIST's default: "
                 "$FASHION_MNIST_DIR, else " +
                     std::string(data::kDefaultFashionMnistDir) + ")");
  app.add_option("--input_layout", f->input_layout,
                 "how npy and safetensors images are saved: nchw ([n, "
                 "channels, height, width]; [n, height, width] is one "
                 "channel) or nhwc ([n, height, width, channels], as PIL and "
                 "np.asarray(image) give them; read channels first)")
      ->check(CLI::IsMember({"nchw", "nhwc"}))
      ->capture_default_str();
}

// Threads per device, and --reproducible's cut.
void AddReproducibleFlags(CLI::App& app, TrainerFlags* f) {
  app.add_option("--threads_per_device", f->threads_per_device,
                 "cores each device's ops use (0: the machine's cores shared "
                 "out; 1 with --reproducible)")
      ->check(WholeNumber(0, 1024));
  app.add_flag(
      "--reproducible", f->reproducible,
      "the same parameters, bit for bit, on any number of devices and "
      "processes (same build, same kind of device, same "
      "--threads_per_device; GPUs take deterministic convolution "
      "algorithms): "
      "each batch is cut into --micro_shards parts, each normalised and "
      "differentiated on its own, and their gradients are summed in a way "
      "whose bits do not depend on the order; --batch_size and --lr left "
      "out do not scale with the devices");
  app.add_option("--micro_shards", f->micro_shards,
                 "with --reproducible: the parts each batch is cut into (0: "
                 "8; at least the devices; keep it the same in the runs you "
                 "compare)")
      ->check(WholeNumber(0, 4096));
}

// How much to train and evaluate on, and what to write.
void AddOutputFlags(CLI::App& app, TrainerFlags* f) {
  app.add_option("--limit", f->limit,
                 "train on the first N training images only (quick runs; 0: "
                 "all)")
      ->check(WholeNumber(0, kMaxInt64));
  app.add_option("--validation", f->validation,
                 "hold out this share of the training images (chosen by "
                 "--seed) and report their accuracy after each epoch (0: "
                 "none)")
      ->check(cli::RealIn(0, 1))
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
  app.add_option("--predict", f->predict,
                 "run --params_in's model on the inputs in this file (.npy, "
                 ".safetensors: its 'inputs' tensor; a PNG or JPEG image, or "
                 "a folder of them), each sample as the training data's "
                 "(type and shape), write every sample's class "
                 "probabilities as CSV and exit, no training");
  app.add_option("--predict_out", f->predict_out,
                 "write --predict's CSV to this file (default: standard "
                 "output)");
}

// Which epoch's model to keep, and when to stop: by the held-out images.
void AddSelectionFlags(CLI::App& app, TrainerFlags* f) {
  app.add_flag("--keep_best", f->keep_best,
               "keep the epoch with the best --validation accuracy, not the "
               "last: in --params_out and DIR/<program>.best.ckpt "
               "(--checkpoint_dir)");
  app.add_option("--early_stop", f->early_stop,
                 "stop once the --validation accuracy has not improved for N "
                 "epochs (0: train every epoch)")
      ->check(WholeNumber(0, kMaxInt))
      ->capture_default_str();
}

// Checkpoints, replica checks and the steps' overlap.
void AddCheckpointFlags(CLI::App& app, TrainerFlags* f) {
  app.add_option("--checkpoint_dir", f->checkpoint_dir,
                 "write a checkpoint (parameters, batch-norm statistics, "
                 "optimizer state, position, metrics) to DIR/<program>.ckpt "
                 "every --checkpoint_every epochs, after the last one, and on "
                 "SIGINT, SIGTERM, SIGHUP, SIGUSR1 or SIGUSR2 (made if "
                 "missing)");
  app.add_option("--checkpoint_every", f->checkpoint_every,
                 "epochs between checkpoints")
      ->check(WholeNumber(1, kMaxInt))
      ->capture_default_str();
  app.add_option("--checkpoint_steps", f->checkpoint_steps,
                 "also write the checkpoint every N steps of the run, in the "
                 "background: training goes on while it is written, so a "
                 "killed or restarted job loses at most N steps (0: per "
                 "epoch only)")
      ->check(WholeNumber(0, kMaxInt64))
      ->capture_default_str();
  app.add_option("--on_process_loss", f->on_process_loss,
                 "when a process of a job over TCP (torchrun, srun, by hand) "
                 "dies or stops answering: end the job (end; with "
                 "--checkpoint_steps a launcher's restart resumes it), or "
                 "regroup: the others go on without it from the last step "
                 "they all finished, kept in memory (each step is finished "
                 "before the next is queued); process 0 must live")
      ->check(CLI::IsMember({"end", "regroup"}))
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

// Flags that bound each other: a usage error before any work (exit 2).
// Settings of the optimizer left out take its own defaults.
void AddFlagBounds(CLI::App& app, TrainerFlags* f) {
  app.final_callback([&app, f] {
    const nn::OptimizerSpec& spec = nn::FindOptimizer(f->optimizer);
    for (auto [setting, value] :
         {std::pair<const char*, double*>{"beta1", &f->beta1},
          {"beta2", &f->beta2},
          {"eps", &f->eps}}) {
      float own = 0;
      if (app.count(std::string("--") + setting) == 0 &&
          nn::Reads(spec, setting, &own)) {
        *value = DecimalOf(own);
      }
    }
    if (f->micro_shards != 0 && !f->reproducible) {
      throw CLI::ValidationError("--micro_shards",
                                 "cuts batches for --reproducible only; add "
                                 "--reproducible, or leave it out");
    }
    for (auto [flag, used] :
         {std::pair<const char*, bool>{"--keep_best", f->keep_best},
          {"--early_stop", f->early_stop > 0}}) {
      if (used && f->validation <= 0) {
        throw CLI::ValidationError(
            flag,
            "chooses by the held-out images' accuracy: add --validation "
            "(e.g. --validation=0.1, a share of the training images)");
      }
    }
    if (f->keep_best && f->params_out.empty() && f->checkpoint_dir.empty()) {
      throw CLI::ValidationError(
          "--keep_best",
          "keeps the best epoch in --params_out or "
          "--checkpoint_dir (DIR/<program>.best.ckpt): give one");
    }
    if (f->warmup_epochs > 0 && f->warmup_epochs >= f->epochs) {
      throw CLI::ValidationError("--warmup_epochs",
                                 "must be less than --epochs (" +
                                     std::to_string(f->epochs) + "), got " +
                                     FormatNumber(f->warmup_epochs));
    }
  });
}

}  // namespace

void AddTrainerFlags(CLI::App& app, TrainerFlags* f, int default_epochs,
                     const std::string& batch_default,
                     const std::string& lr_default) {
  f->epochs = default_epochs;
  cli::UseConventions(app);
  // In --help's order.
  AddDeviceAndStepFlags(app, f, batch_default, lr_default);
  AddOptimizerFlags(app, f);
  AddComputeFlags(app, f);
  AddDataFlags(app, f);
  AddReproducibleFlags(app, f);
  AddOutputFlags(app, f);
  AddSelectionFlags(app, f);
  AddCheckpointFlags(app, f);
  AddFlagBounds(app, f);
}

collectives::DataType GradWireType(const TrainerFlags& flags) {
  return flags.grad_dtype == "bf16" ? collectives::DataType::kBFloat16
                                    : collectives::DataType::kFloat32;
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

double DecimalOf(float value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.7g", value);
  return std::strtod(text, nullptr);
}

std::string OptimizerLine(const TrainerFlags& flags) {
  const nn::OptimizerSpec& spec = nn::FindOptimizer(flags.optimizer);
  std::string parts;
  auto add = [&](const std::string& part) {
    parts += (parts.empty() ? "" : ", ") + part;
  };
  if (nn::Reads(spec, "momentum")) {
    add("momentum " + FormatNumber(flags.momentum));
  }
  if (nn::Reads(spec, "beta1") && nn::Reads(spec, "beta2")) {
    add("betas " + FormatNumber(flags.beta1) + ", " +
        FormatNumber(flags.beta2));
  }
  if (nn::Reads(spec, "eps")) add("eps " + FormatNumber(flags.eps));
  add("weight decay " + FormatNumber(flags.weight_decay));
  return flags.optimizer + " (" + parts + ")";
}

void AddTrainingSettings(const TrainerFlags& flags, RunSettings* settings) {
  const auto number = FormatNumber;
  settings->push_back(
      {"accumulate_steps", std::to_string(flags.accumulate_steps), true});
  settings->push_back({"optimizer", flags.optimizer, true});
  // Augmented batches are other batches: a resume must keep them.
  settings->push_back(
      {"augment",
       (flags.augment.empty() ? "none" : flags.augment) +
           (flags.crop_padding >= 0
                ? " (crop padding " + std::to_string(flags.crop_padding) + ")"
                : ""),
       true});
  // Micro-shards change the trajectory (batch norm per micro-shard, the
  // sums' rounding); a run without them matches a checkpoint without.
  settings->push_back(
      {"reproducible",
       flags.reproducible
           ? std::to_string(MicroShardCount(flags)) + " micro-shards"
           : "off",
       flags.reproducible, "off"});
  // The settings its optimizer reads: another value is another run.
  const nn::OptimizerSpec& spec = nn::FindOptimizer(flags.optimizer);
  if (nn::Reads(spec, "beta1")) {
    settings->push_back({"beta1", number(flags.beta1), true});
  }
  if (nn::Reads(spec, "beta2")) {
    settings->push_back({"beta2", number(flags.beta2), true});
  }
  if (nn::Reads(spec, "eps")) {
    settings->push_back({"eps", number(flags.eps), true});
  }
  settings->push_back({"momentum", number(flags.momentum), true});
  settings->push_back({"weight_decay", number(flags.weight_decay), true});
  settings->push_back({"lr_schedule", flags.lr_schedule, true});
  settings->push_back({"warmup_epochs", number(flags.warmup_epochs), true});
  settings->push_back({"clip_grad_norm", number(flags.clip_grad_norm), true});
  settings->push_back({"params_in", flags.params_in, false});
  settings->push_back({"precision", flags.precision, false});
  settings->push_back({"grad_dtype", flags.grad_dtype, false});
  settings->push_back({"conv_algorithms", flags.conv_algorithms, false});
  settings->push_back({"layout", flags.layout, false});
  settings->push_back(
      {"overlap_steps", flags.overlap_steps ? "true" : "false", false});
  // Collective under mpirun (an evaluation; the stop agreed after each
  // step with --checkpoint_dir): every process must do them alike.
  settings->push_back({"eval_every", std::to_string(flags.eval_every), false});
  settings->push_back({"stop_on_signal",
                       flags.checkpoint_dir.empty() ? "false" : "true", false});
  settings->push_back({"on_process_loss", flags.on_process_loss, false});
  // Each such checkpoint finishes the step in flight: a collective.
  settings->push_back({"checkpoint_steps",
                       flags.checkpoint_dir.empty()
                           ? "0"
                           : std::to_string(flags.checkpoint_steps),
                       false});
}

RunSettings OutputSettings(const TrainerFlags& flags) {
  return {{"--metrics_out", flags.metrics_out},
          {"--csv_out", flags.csv_out},
          {"--plot_out", flags.plot_out},
          {"--params_out", flags.params_out},
          {"--checkpoint_dir", flags.checkpoint_dir},
          {"--resume", flags.resume ? "true" : "false"}};
}

}  // namespace ringlet::trainers
