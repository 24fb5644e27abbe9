// ResNet-18's convolutions as a training step at batch 256 runs them, one
// line per shape: milliseconds a step spends in nn's Conv2dForward,
// Conv2dBackward's input gradient and its weight gradient (the input
// gradient timed as a full backward less one without it), through the CPU
// backend selected, with --threads op threads. Passes are interleaved over
// --reps rounds and the fastest kept, so A/B comparisons of kernel choices
// see the same machine state.
//
//   ./bazelw run //nn/bench:conv_step_bench -- --threads=1
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "nn/compute_options.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/cpu_conv_backend.h"
#include "nn/ops/onednn/conv_plans.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

struct Layer {
  const char* name;
  int64_t c, h, k, r, stride, pad;
  int per_step;  // convolutions of this shape in one ResNet-18 step
};

// d2l's ResNet-18 on 28x28 Fashion-MNIST (3x3 stem, no max pooling).
const Layer kLayers[] = {
    {"stem 1->64 3x3 28x28", 1, 28, 64, 3, 1, 1, 1},
    {"64->64 3x3 28x28", 64, 28, 64, 3, 1, 1, 4},
    {"64->128 3x3 s2 28->14", 64, 28, 128, 3, 2, 1, 1},
    {"64->128 1x1 s2 28->14", 64, 28, 128, 1, 2, 0, 1},
    {"128->128 3x3 14x14", 128, 14, 128, 3, 1, 1, 3},
    {"128->256 3x3 s2 14->7", 128, 14, 256, 3, 2, 1, 1},
    {"128->256 1x1 s2 14->7", 128, 14, 256, 1, 2, 0, 1},
    {"256->256 3x3 7x7", 256, 7, 256, 3, 1, 1, 3},
    {"256->512 3x3 s2 7->4", 256, 7, 512, 3, 2, 1, 1},
    {"256->512 1x1 s2 7->4", 256, 7, 512, 1, 2, 0, 1},
    {"512->512 3x3 4x4", 512, 4, 512, 3, 1, 1, 3},
};

Tensor Random(const Shape& shape, std::mt19937& rng) {
  std::vector<float> values(NumElements(shape));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : values) v = normal(rng);
  return Tensor::FromVector(shape, std::move(values));
}

template <typename Fn>
double Milliseconds(Fn fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

int Main(int argc, char** argv) {
  int threads = 1, reps = 3;
  int64_t batch = 256;
  std::string backend = "onednn";
  bool compare = false;
  CLI::App app{
      "Milliseconds per ResNet-18 training step in each convolution shape "
      "and pass (forward, input gradient, weight gradient), nn's CPU ops.",
      "conv_step_bench"};
  cli::UseConventions(app);
  app.add_option("--threads", threads, "op threads")->check(CLI::Range(1, 256));
  app.add_option("--batch_size", batch, "images per step")
      ->check(CLI::Range(1, 4096));
  app.add_option("--reps", reps, "interleaved rounds; the fastest is kept")
      ->check(CLI::Range(1, 100));
  app.add_flag("--compare_group_gemm", compare,
               "time each shape with oneDNN's primitives only and with the "
               "group-GEMM path (nn/ops/onednn/conv_gemm.h), side by side");
  app.add_option("--cpu_conv", backend, "onednn or eigen")
      ->check(CLI::IsMember({"onednn", "eigen"}));
  RINGLET_PARSE_FLAGS(app, argc, argv);
  const auto op_threads = ScopedCompute(&ComputeOptions::op_threads, threads);
  const auto conv_backend = ScopedCompute(
      &ComputeOptions::cpu_conv,
      backend == "eigen" ? CpuConvBackend::kEigen : CpuConvBackend::kOneDnn);

  std::mt19937 rng(1);
  struct Inputs {
    Tensor x, w, b, dy;
    Conv2dParams params;
  };
  std::vector<Inputs> inputs;
  for (const Layer& l : kLayers) {
    const int64_t p = (l.h + 2 * l.pad - l.r) / l.stride + 1;
    inputs.push_back({Random({batch, l.c, l.h, l.h}, rng),
                      Random({l.k, l.c, l.r, l.r}, rng),
                      Random({l.k}, rng),
                      Random({batch, l.k, p, p}, rng),
                      {static_cast<int>(l.stride), static_cast<int>(l.pad)}});
  }
  // Configurations timed side by side: oneDNN's primitives only, and with
  // the group-GEMM path where its rule takes a shape.
  std::vector<bool> configs = {true};
  if (compare) configs = {false, true};
  const size_t n = inputs.size();
  struct Times {
    double forward = 1e30, weights = 1e30, full = 1e30;
  };
  std::vector<std::vector<Times>> best(configs.size(), std::vector<Times>(n));
  for (int rep = 0; rep <= reps; ++rep) {  // round 0 warms up
    for (size_t i = 0; i < n; ++i) {
      for (size_t c = 0; c < configs.size(); ++c) {
        onednn::AllowGroupGemm(configs[c]);
        const Inputs& in = inputs[i];
        const double f =
            Milliseconds([&] { Conv2dForward(in.x, in.w, in.b, in.params); });
        const double wt = Milliseconds(
            [&] { Conv2dBackward(in.x, in.w, true, in.dy, in.params, false); });
        const double all = Milliseconds(
            [&] { Conv2dBackward(in.x, in.w, true, in.dy, in.params, true); });
        if (rep == 0) continue;
        Times& t = best[c][i];
        t.forward = std::min(t.forward, f);
        t.weights = std::min(t.weights, wt);
        t.full = std::min(t.full, all);
      }
    }
  }
  std::printf(
      "ms per step at batch %lld, %d op thread(s), %s (each shape times its "
      "count in a step)%s\n\n",
      static_cast<long long>(batch), threads, backend.c_str(),
      compare ? "; primitives only / with group GEMM" : "");
  std::printf(
      "| convolution | per step | forward | input grad | weight grad |\n"
      "|---|---|---|---|---|\n");
  std::vector<std::vector<double>> sums(configs.size(),
                                        std::vector<double>(3, 0.0));
  for (size_t i = 0; i < n; ++i) {
    const int m = kLayers[i].per_step;
    std::string cells[3];
    for (size_t c = 0; c < configs.size(); ++c) {
      const Times& t = best[c][i];
      const double parts[3] = {
          m * t.forward, m * std::max(0.0, t.full - t.weights), m * t.weights};
      for (int j = 0; j < 3; ++j) {
        sums[c][j] += parts[j];
        cells[j] += (c ? " / " : "") + std::to_string(std::lround(parts[j]));
      }
    }
    std::printf("| %s | %d | %s | %s | %s |\n", kLayers[i].name, m,
                cells[0].c_str(), cells[1].c_str(), cells[2].c_str());
  }
  std::string total_cells[3], total;
  for (size_t c = 0; c < configs.size(); ++c) {
    for (int j = 0; j < 3; ++j) {
      total_cells[j] +=
          (c ? " / " : "") + std::to_string(std::lround(sums[c][j]));
    }
    total += (c ? " / " : "") +
             std::to_string(std::lround(sums[c][0] + sums[c][1] + sums[c][2]));
  }
  std::printf("| all | | %s | %s | %s |\n\ntotal %s ms\n",
              total_cells[0].c_str(), total_cells[1].c_str(),
              total_cells[2].c_str(), total.c_str());
  return 0;
}

}  // namespace
}  // namespace ringlet::nn

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("conv_step_bench",
                               [&] { return ringlet::nn::Main(argc, argv); });
}
