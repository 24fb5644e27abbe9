// ResNet-18's batch norms as a training step at batch 256 runs them, with
// what follows each (a ReLU; in a residual unit's end the shortcut's add
// first): milliseconds a step spends there, forward and backward, as
// separate ops (BatchNorm2d, Add, ReluForward; ReluBackward, the
// batch-norm backward) and fused (BatchNormEpilogue), side by side.
// Rounds are interleaved and the fastest kept, so both see the same
// machine state.
//
//   ./bazelw run //nn/bench:batch_norm_step_bench -- --threads=2
//   --precision=bf16
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "nn/compute_options.h"
#include "nn/cpu_features.h"
#include "nn/ops/activation.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

struct Shape2d {
  const char* name;
  int64_t c, h;
  int relu_only;      // bn -> relu (the stem, each unit's first)
  int with_residual;  // bn -> add shortcut -> relu (each unit's end)
};

// d2l's ResNet-18 on 28x28 Fashion-MNIST (3x3 stem, no max pooling).
const Shape2d kShapes[] = {
    {"64 x 28x28", 64, 28, 3, 2},
    {"128 x 14x14", 128, 14, 2, 2},
    {"256 x 7x7", 256, 7, 2, 2},
    {"512 x 4x4", 512, 4, 2, 2},
};

Tensor Random(const Shape& shape, std::mt19937& rng, DType dtype) {
  std::vector<float> values(NumElements(shape));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : values) v = normal(rng);
  return Tensor::FromVector(shape, std::move(values)).To(dtype);
}

template <typename Fn>
double Milliseconds(Fn fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

struct Inputs {
  Tensor x, residual, dy, gamma, beta;
};

// One forward and backward, fused or as separate ops; returns the
// milliseconds of each.
std::pair<double, double> Step(const Inputs& in, bool residual, bool fused) {
  BatchNormStats stats{Tensor({in.gamma.numel()}), Tensor({in.gamma.numel()})};
  stats.running_var.Fill(1.0f);
  BatchNormCache cache;
  Tensor y;
  const double forward = Milliseconds([&] {
    if (fused) {
      BatchNormEpilogue epilogue;
      if (residual) epilogue.residual = in.residual;
      epilogue.relu = true;
      y = BatchNorm2dTrainForward(in.x, in.gamma, in.beta, &stats, &cache,
                                  nullptr, epilogue);
    } else {
      y = BatchNorm2dTrainForward(in.x, in.gamma, in.beta, &stats, &cache);
      if (residual) y = Add(y, in.residual);
      y = ReluForward(y);
    }
  });
  const double backward = Milliseconds([&] {
    if (fused) {
      BatchNorm2dBackward(in.dy, in.gamma, cache);
    } else {
      BatchNorm2dBackward(ReluBackward(y, in.dy), in.gamma, cache);
    }
  });
  return {forward, backward};
}

int Main(int argc, char** argv) {
  int threads = 1, reps = 5;
  int64_t batch = 256;
  std::string precision = "fp32";
  CLI::App app{
      "Milliseconds per ResNet-18 training step in batch norm and the add "
      "and ReLU after it: separate ops and the fused epilogue, side by side.",
      "batch_norm_step_bench"};
  cli::UseConventions(app);
  app.add_option("--threads", threads, "op threads")->check(CLI::Range(1, 256));
  app.add_option("--batch_size", batch, "images per step")
      ->check(CLI::Range(2, 4096));
  app.add_option("--reps", reps, "interleaved rounds; the fastest is kept")
      ->check(CLI::Range(1, 100));
  app.add_option("--precision", precision,
                 "fp32, or bf16 (bfloat16 activations, as under autocast)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  RINGLET_PARSE_FLAGS(app, argc, argv);
  const auto op_threads = ScopedCompute(&ComputeOptions::op_threads, threads);
  const DType dtype = precision == "bf16" ? DType::kBFloat16 : DType::kFloat32;

  std::mt19937 rng(1);
  std::vector<Inputs> inputs;
  for (const Shape2d& s : kShapes) {
    const Shape shape = {batch, s.c, s.h, s.h};
    inputs.push_back({Random(shape, rng, dtype), Random(shape, rng, dtype),
                      Random(shape, rng, dtype),
                      Random({s.c}, rng, DType::kFloat32),
                      Random({s.c}, rng, DType::kFloat32)});
  }
  // best[shape][residual][fused] = {forward, backward}
  const size_t n = inputs.size();
  std::vector<std::pair<double, double>> best(n * 4, {1e30, 1e30});
  for (int rep = 0; rep <= reps; ++rep) {  // round 0 warms up
    for (size_t i = 0; i < n; ++i) {
      for (int residual = 0; residual < 2; ++residual) {
        for (int fused = 0; fused < 2; ++fused) {
          const auto t = Step(inputs[i], residual, fused);
          if (rep == 0) continue;
          auto& b = best[(i * 2 + residual) * 2 + fused];
          b.first = std::min(b.first, t.first);
          b.second = std::min(b.second, t.second);
        }
      }
    }
  }
  std::printf(
      "ms per step at batch %lld, %d op thread(s), %s, %s; separate ops / "
      "fused\n\n",
      static_cast<long long>(batch), threads, precision.c_str(),
      GetCpuFeatures().model.c_str());
  std::printf(
      "| activations | after batch norm | per step | forward | backward |\n"
      "|---|---|---|---|---|\n");
  double total[2] = {0, 0};
  for (size_t i = 0; i < n; ++i) {
    for (int residual = 0; residual < 2; ++residual) {
      const int m = residual ? kShapes[i].with_residual : kShapes[i].relu_only;
      const auto& separate = best[(i * 2 + residual) * 2];
      const auto& fused = best[(i * 2 + residual) * 2 + 1];
      total[0] += m * (separate.first + separate.second);
      total[1] += m * (fused.first + fused.second);
      std::printf("| %s | %s | %d | %.1f / %.1f | %.1f / %.1f |\n",
                  kShapes[i].name, residual ? "add, relu" : "relu", m,
                  m * separate.first, m * fused.first, m * separate.second,
                  m * fused.second);
    }
  }
  std::printf("\ntotal %.1f / %.1f ms (fused: %.2fx the separate ops' time)\n",
              total[0], total[1], total[1] / total[0]);
  return 0;
}

}  // namespace
}  // namespace ringlet::nn

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("batch_norm_step_bench",
                               [&] { return ringlet::nn::Main(argc, argv); });
}
