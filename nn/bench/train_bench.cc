// train_bench: training images per second (forward, backward and SGD step,
// data already in memory) and peak memory (the host's RSS; on a GPU also
// the most its caching allocator had in use during the timed steps), for
// the d2l LeNet and ResNet-18.
//
//   ./bazelw run //nn/bench:train_bench -- --model=resnet18 --batch_size=256
//       --threads=1 --steps=3
//   ./bazelw run //nn/bench:train_bench -- --device=cuda:0 --model=resnet18
//
// Compare with nn/bench/train_bench_torch.py, which runs the same models in
// PyTorch with the same batch and threads.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "gpu/device_probe.h"
#include "gpu/profiler.h"
#include "nn/compute_options.h"
#include "nn/cpu_features.h"
#include "nn/device.h"
#include "nn/experimental/captured_step.h"
#include "nn/gpu_backend.h"
#include "nn/gpu_precision.h"
#include "nn/layers/init.h"
#include "nn/memory_format.h"
#include "nn/models/lenet.h"
#include "nn/models/resnet.h"
#include "nn/ops/autocast.h"
#include "nn/ops/bf16_support.h"
#include "nn/ops/cpu_conv_backend.h"
#include "nn/ops/loss.h"
#include "nn/ops/op_threads.h"
#include "nn/optim/sgd.h"

namespace ringlet::nn {
namespace {

long PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss * 1024L;  // Linux reports KiB.
}

// Waits for the device's queued work: a copy to the host is ordered after
// it (a no-op wait on the CPU).
void WaitFor(const Tensor& t) {
  if (t.device().is_cuda()) t.To(Device::Cpu());
}

// Milliseconds for JSON; null where not measured (negative).
std::string JsonMs(double ms) {
  if (ms < 0) return "null";
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", ms);
  return text;
}

int Main(int argc, char** argv) {
  std::string model = "lenet", device_text = "cpu";
  std::string cpu_conv;
  try {
    cpu_conv = CpuConvBackendName(GetCpuConvBackend());
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "train_bench: %s\n", e.what());
    return 2;
  }
  int64_t batch_size = 256;
  int threads = 1, steps = 20, warmup = 2;
  bool json = false;
  CLI::App app{"Training throughput of the d2l models on one device.",
               "train_bench"};
  ringlet::cli::UseConventions(app);
  app.add_option("--model", model, "lenet or resnet18")
      ->check(CLI::IsMember({"lenet", "resnet18"}));
  app.add_option("--batch_size", batch_size, "images per step")
      ->check(CLI::Range(1, 65536));
  app.add_option("--device", device_text,
                 "cpu or cuda:N (data and model on that device)");
  app.add_option("--threads", threads,
                 "threads the device's convolutions may use")
      ->check(CLI::Range(1, 256));
  app.add_option("--cpu_conv", cpu_conv,
                 "CPU convolutions: onednn, or eigen (the portable "
                 "reference); default from $RINGLET_CPU_CONV, else onednn "
                 "(eigen in a build without oneDNN)")
      ->check(CLI::IsMember({"onednn", "eigen"}));
  app.add_option("--steps", steps, "timed steps")->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup, "untimed steps first")
      ->check(CLI::Range(0, 100000));
  std::string precision = "fp32";
  app.add_option("--precision", precision,
                 "fp32; tf32 on GPUs (tensor cores, as PyTorch's "
                 "allow_tf32); or bf16, mixed precision as torch.autocast "
                 "(GPUs, and CPUs with AVX512_BF16 or AMX)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  std::string conv_algorithms = "auto";
  app.add_option("--conv_algorithms", conv_algorithms,
                 "GPU convolutions: measure (time cuDNN's candidates once "
                 "per shape, keep the fastest), heuristic, deterministic, "
                 "graph (cuDNN's graph-API engines, timed once per shape), "
                 "or auto (graph with --precision=bf16, measure otherwise)")
      ->check(CLI::IsMember(
          {"auto", "measure", "heuristic", "deterministic", "graph"}))
      ->capture_default_str();
  std::string layout = "nchw";
  app.add_option("--layout", layout,
                 "GPU activations' memory format: nchw, or nhwc "
                 "(channels-last, PyTorch's channels_last)")
      ->check(CLI::IsMember({"nchw", "nhwc"}))
      ->capture_default_str();
  bool cuda_graph = false;
  app.add_option("--cuda_graph", cuda_graph,
                 "GPU: after the warmup, record one step as a CUDA graph and "
                 "replay it (one launch a step instead of hundreds; the "
                 "labels and learning rate are the captured ones, as they "
                 "are fixed here anyway)")
      ->capture_default_str();
  app.add_flag("--json", json, "one JSON object instead of a line");
  RINGLET_PARSE_FLAGS(app, argc, argv);
  const bool bf16 = precision == "bf16";
  ComputeOptions options;
  options.gpu_precision =
      bf16 ? GpuPrecision::kFp32 : ParseGpuPrecision(precision);
  options.conv_algorithms = ResolveConvAlgorithms(conv_algorithms, bf16);
  options.gpu_layout = ParseLayout(layout);
  options.op_threads = threads;
  options.cpu_conv = ParseCpuConvBackend(cpu_conv);
  options.autocast = bf16 ? DType::kBFloat16 : DType::kFloat32;
  const ComputeScope compute(options);
  Device device;
  try {
    device = ParseDevice(device_text);
    const int gpus = static_cast<int>(gpu::ProbeCudaDevices().usable.size());
    if (device.is_cpu() && device.index != 0) {
      throw DeviceError("the benchmark runs on one CPU device: --device=cpu");
    }
    if (device.is_cpu() && precision == "tf32") {
      throw DeviceError(
          "--precision=tf32 applies to GPUs; CPU devices compute in float32 "
          "or bf16 (leave --precision out, or use --device=cuda:N)");
    }
    if (bf16) {
      RequireBf16Training({device});
    }
    if (device.is_cpu() && conv_algorithms != "auto") {
      throw DeviceError("--conv_algorithms=" + conv_algorithms +
                        " applies to GPUs (cuDNN); leave it out, or use "
                        "--device=cuda:N");
    }
    if (device.is_cpu() && layout != "nchw") {
      throw DeviceError("--layout=" + layout +
                        " applies to GPUs (cuDNN); CPU devices keep their "
                        "own layout (leave --layout out)");
    }
    if (device.is_cpu() && cuda_graph) {
      throw DeviceError(
          "--cuda_graph applies to GPUs; leave it out, or use "
          "--device=cuda:N");
    }
    if (cuda_graph && warmup < 1) {
      throw DeviceError(
          "--cuda_graph needs --warmup=1 or more: every shape runs once "
          "before the step is captured (cuDNN's algorithms are chosen then)");
    }
    if (device.is_cuda() && device.index >= gpus) {
      throw DeviceError(
          ToString(device) + " does not exist; this machine has " +
          std::to_string(gpus) + " usable GPUs; use --device=cpu");
    }
  } catch (const DeviceError& e) {
    std::fprintf(stderr, "train_bench: %s\n", e.what());
    return 1;
  }

  // Random images and labels: throughput does not depend on the values.
  Tensor images({batch_size, 1, 28, 28});
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  for (int64_t i = 0; i < images.numel(); ++i) images.data()[i] = pixel(rng);
  std::vector<int32_t> labels(batch_size);
  for (int32_t& l : labels) l = static_cast<int32_t>(rng() % 10);
  if (device.is_cuda()) images = images.To(device);

  std::function<void()> step;
  LeNetParams lenet;
  std::unique_ptr<Sequential> resnet;
  std::unique_ptr<Sgd> sgd;
  if (model == "lenet") {
    lenet = LeNetParams::Init(0, InitScheme::kKaimingNormal).To(device);
    step = [&] {
      LeNetActivations acts;
      // The loss is not read (nor is it by the PyTorch peer): on a GPU the
      // step queues its work and the host never waits.
      const PendingLoss r = StartSoftmaxCrossEntropy(
          LeNetForward(lenet, images, &acts), labels.data(), Reduction::kMean);
      const LeNetParams g = LeNetBackward(lenet, acts, r.dlogits());
      SgdUpdateAll(lenet.All(), g.All(), {}, {0.1f, 0.0f, 0.0f});
    };
  } else {
    resnet = MakeResNet18(10, 1);
    InitParameters(*resnet, InitScheme::kNormal001, 0);
    if (device.is_cuda()) resnet->To(device);
    // No gradient for the images, as in PyTorch's peer.
    resnet->SetInputGradientNeeded(false);
    sgd = std::make_unique<Sgd>(resnet->Parameters(),
                                SgdOptions{0.1f, 0.0f, 0.0f});
    step = [&] {
      sgd->ZeroGrad();
      const PendingLoss r = StartSoftmaxCrossEntropy(
          resnet->Forward(images), labels.data(), Reduction::kMean);
      resnet->Backward(r.dlogits());
      sgd->Step();
    };
  }
  const Tensor& probe = model == "lenet" ? lenet.b4 : images;
  for (int i = 0; i < warmup; ++i) step();
  WaitFor(probe);
  std::unique_ptr<CapturedStep> graph;
  if (cuda_graph) {
    try {
      graph = std::make_unique<CapturedStep>(device, step);
    } catch (const DeviceError& e) {
      std::fprintf(stderr, "train_bench: %s\n", e.what());
      return 1;
    }
    step = [&graph] { graph->Replay(); };
    step();  // The first launch of a graph may cost more.
    WaitFor(probe);
  }
  // On a GPU: how long the host takes to queue one step with the device
  // idle, and that step alone to its end (best of 3). A host time near the
  // throughput's step time means the host's launches limit the step: what
  // --cuda_graph is for.
  double host_ms = -1, isolated_ms = -1;
  if (device.is_cuda()) {
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      step();
      const auto t1 = std::chrono::steady_clock::now();
      WaitFor(probe);
      const auto t2 = std::chrono::steady_clock::now();
      const double queued = std::chrono::duration<double>(t1 - t0).count();
      const double done = std::chrono::duration<double>(t2 - t0).count();
      host_ms = i == 0 ? 1e3 * queued : std::min(host_ms, 1e3 * queued);
      isolated_ms = i == 0 ? 1e3 * done : std::min(isolated_ms, 1e3 * done);
    }
  }
  // The GPU memory of the timed steps alone (the warm-up's algorithm
  // searches left out), as torch.cuda.max_memory_allocated after a reset.
  if (device.is_cuda()) GpuBackendFor(device).ResetPeakMemory(device.index);
  const uint64_t waits_before = HostWaitsForGpus();
  // Only the timed steps for `ncu --profile-from-start off`.
  gpu::StartProfiling();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  // Host waits for the GPU inside the timed steps (0 is the aim: the host
  // queues step after step, as PyTorch's does).
  const double waits_per_step =
      static_cast<double>(HostWaitsForGpus() - waits_before) / steps;
  WaitFor(model == "lenet" ? lenet.b4 : resnet->Parameters().back()->value);
  gpu::StopProfiling();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const double images_per_sec =
      static_cast<double>(batch_size) * steps / seconds;
  std::string gpu_peak = "null", gpu_held = "null";
  if (device.is_cuda()) {
    const GpuMemoryStats memory =
        GpuBackendFor(device).MemoryStats(device.index);
    gpu_peak = std::to_string(memory.peak_in_use_bytes);
    gpu_held = std::to_string(memory.held_bytes);
  }
  if (json) {
    std::printf(
        "{\"model\": \"%s\", \"device\": \"%s\", \"batch_size\": %lld, "
        "\"threads\": %d, \"cpu\": \"%s\", \"cpu_bf16_isa\": \"%s\", "
        "\"cpu_conv\": \"%s\", \"precision\": \"%s\", "
        "\"conv_algorithms\": \"%s\", \"layout\": \"%s\", "
        "\"cuda_graph\": %s, \"images_per_sec\": %.2f, "
        "\"step_ms\": %.3f, \"host_ms_per_step\": %s, "
        "\"isolated_step_ms\": %s, "
        "\"host_waits_per_step\": %.2f, \"peak_rss_bytes\": %ld, "
        "\"gpu_peak_bytes\": %s, \"gpu_held_bytes\": %s}\n",
        model.c_str(), ToString(device).c_str(),
        static_cast<long long>(batch_size), threads,
        GetCpuFeatures().model.c_str(),
        Bf16InstructionSets(GetCpuFeatures()).c_str(), cpu_conv.c_str(),
        precision.c_str(), Name(nn::conv_algorithms()), layout.c_str(),
        cuda_graph ? "true" : "false", images_per_sec, 1e3 * seconds / steps,
        JsonMs(host_ms).c_str(), JsonMs(isolated_ms).c_str(), waits_per_step,
        PeakRssBytes(), gpu_peak.c_str(), gpu_held.c_str());
  } else {
    std::printf(
        "%-9s %-6s batch %4lld  threads %d  conv %-6s  %-4s  %9.1f images/s  "
        "peak RSS %6.0f MiB\n",
        model.c_str(), ToString(device).c_str(),
        static_cast<long long>(batch_size), threads, cpu_conv.c_str(),
        precision.c_str(), images_per_sec, PeakRssBytes() / 1048576.0);
  }
  return 0;
}

}  // namespace
}  // namespace ringlet::nn

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("train_bench",
                               [&] { return ringlet::nn::Main(argc, argv); });
}
