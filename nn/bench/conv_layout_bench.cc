// The measurement behind conv_plans.cc's layout rules: for each convolution
// of ResNet-18 and the scratch LeNet, at the chunk sizes nn runs, how fast
// oneDNN's kernels are with the activations in `any` (its blocked layout),
// plain NCHW (its GEMM kernels) and NHWC, counting the reorders from and to
// our NCHW tensors. One OpenMP thread, as nn runs them; inputs are random
// values (uninitialised memory can hold denormals, which slowed some
// kernels fourfold in an earlier version of this measurement).
//
//   ./bazelw run //nn/bench:conv_layout_bench [-- --reps=10]
#include <omp.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "nn/ops/onednn/conv_gemm.h"
#include "nn/ops/onednn/conv_plans.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

const dnnl::engine& Engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory RandomMemory(const memory::desc& desc, std::mt19937& rng) {
  memory m(desc, Engine());
  float* data = static_cast<float*>(m.get_data_handle());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (size_t i = 0; i < desc.get_size() / sizeof(float); ++i) {
    data[i] = uniform(rng);
  }
  return m;
}

// Milliseconds per execution, after one untimed run.
double Milliseconds(const dnnl::primitive& p,
                    const std::unordered_map<int, memory>& args, int reps) {
  dnnl::stream stream(Engine());
  p.execute(stream, args);
  stream.wait();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) p.execute(stream, args);
  stream.wait();
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
             .count() /
         reps;
}

double ReorderMilliseconds(const memory::desc& from, const memory::desc& to,
                           std::mt19937& rng, int reps) {
  if (from == to) return 0;
  return Milliseconds(dnnl::reorder(dnnl::reorder::primitive_desc(
                          Engine(), from, Engine(), to)),
                      {{DNNL_ARG_FROM, RandomMemory(from, rng)},
                       {DNNL_ARG_TO, RandomMemory(to, rng)}},
                      reps);
}

struct Conv {
  const char* name;
  int n, c, h, k, r, stride, pad;
};

struct Timing {
  double kernel_ms, reorder_ms;
  std::string impl;
};

using ringlet::nn::onednn::ConvPass;

const char* LayoutName(Tag t) {
  return t == Tag::any ? "any" : t == Tag::nchw ? "nchw" : "nhwc";
}

Timing Measure(const Conv& v, ConvPass pass, Tag layout, int reps,
               std::mt19937& rng) {
  const int p = (v.h + 2 * v.pad - v.r) / v.stride + 1;
  const memory::dims src{v.n, v.c, v.h, v.h}, wei{v.k, v.c, v.r, v.r},
      dst{v.n, v.k, p, p}, strides{v.stride, v.stride}, pad{v.pad, v.pad};
  const memory::desc src_d(src, kF32, layout), dst_d(dst, kF32, layout),
      wei_d(wei, kF32, Tag::any), plain_src(src, kF32, Tag::nchw),
      plain_dst(dst, kF32, Tag::nchw);
  const dnnl::convolution_forward::primitive_desc fwd(
      {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
       src_d, wei_d, dst_d, strides, pad, pad},
      Engine());
  Timing t;
  if (pass == ConvPass::kForward) {
    t.kernel_ms =
        Milliseconds(dnnl::convolution_forward(fwd),
                     {{DNNL_ARG_SRC, RandomMemory(fwd.src_desc(), rng)},
                      {DNNL_ARG_WEIGHTS, RandomMemory(fwd.weights_desc(), rng)},
                      {DNNL_ARG_DST, RandomMemory(fwd.dst_desc(), rng)}},
                     reps);
    t.reorder_ms = ReorderMilliseconds(plain_src, fwd.src_desc(), rng, reps) +
                   ReorderMilliseconds(fwd.dst_desc(), plain_dst, rng, reps);
    t.impl = fwd.impl_info_str();
  } else if (pass == ConvPass::kBackwardData) {
    const dnnl::convolution_backward_data::primitive_desc bwd(
        {dnnl::algorithm::convolution_direct, src_d, wei_d, dst_d, strides, pad,
         pad},
        Engine(), fwd);
    t.kernel_ms = Milliseconds(
        dnnl::convolution_backward_data(bwd),
        {{DNNL_ARG_DIFF_DST, RandomMemory(bwd.diff_dst_desc(), rng)},
         {DNNL_ARG_WEIGHTS, RandomMemory(bwd.weights_desc(), rng)},
         {DNNL_ARG_DIFF_SRC, RandomMemory(bwd.diff_src_desc(), rng)}},
        reps);
    t.reorder_ms =
        ReorderMilliseconds(plain_dst, bwd.diff_dst_desc(), rng, reps) +
        ReorderMilliseconds(bwd.diff_src_desc(), plain_src, rng, reps);
    t.impl = bwd.impl_info_str();
  } else {
    const dnnl::convolution_backward_weights::primitive_desc bwd(
        {dnnl::algorithm::convolution_direct, src_d, wei_d, dst_d, strides, pad,
         pad},
        Engine(), fwd);
    t.kernel_ms = Milliseconds(
        dnnl::convolution_backward_weights(bwd),
        {{DNNL_ARG_SRC, RandomMemory(bwd.src_desc(), rng)},
         {DNNL_ARG_DIFF_DST, RandomMemory(bwd.diff_dst_desc(), rng)},
         {DNNL_ARG_DIFF_WEIGHTS, RandomMemory(bwd.diff_weights_desc(), rng)}},
        reps);
    t.reorder_ms =
        ReorderMilliseconds(plain_src, bwd.src_desc(), rng, reps) +
        ReorderMilliseconds(plain_dst, bwd.diff_dst_desc(), rng, reps);
    t.impl = bwd.impl_info_str();
  }
  return t;
}

std::vector<float> RandomFloats(int64_t count, std::mt19937& rng) {
  std::vector<float> v(count);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& f : v) f = uniform(rng);
  return v;
}

// Milliseconds for 64 images through the group-GEMM path (conv_gemm.h), in
// groups as a batch of 256 would be cut.
constexpr int kGroupGemmImages = 64;
double GroupGemmMilliseconds(const Conv& v, ConvPass pass, int reps,
                             std::mt19937& rng) {
  using ringlet::nn::ConvGeometry;
  namespace onednn = ringlet::nn::onednn;
  const int p = (v.h + 2 * v.pad - v.r) / v.stride + 1;
  const onednn::ConvShape batch{256, v.c, v.h,      v.h,   v.k,
                                v.r, v.r, v.stride, v.pad, false};
  const int64_t group = onednn::GroupGemmImages(batch);
  const ConvGeometry g{kGroupGemmImages, v.c,  v.h, v.h, v.k, v.r, v.r, p, p,
                       v.stride,         v.pad};
  const std::vector<float> x = RandomFloats(g.n * g.image_size(), rng),
                           w = RandomFloats(g.k * g.crs(), rng),
                           dy = RandomFloats(g.n * g.k * g.pq(), rng);
  std::vector<float> out(std::max(g.n * g.image_size(), g.n * g.k * g.pq()));
  std::vector<float> dw(g.k * g.crs());
  onednn::GroupGemmBuffers buffers;
  auto run = [&] {
    for (int64_t n0 = 0; n0 < g.n; n0 += group) {
      ConvGeometry part = g;
      part.n = std::min<int64_t>(group, g.n - n0);
      if (pass == ConvPass::kForward) {
        onednn::GroupGemmForward(part, x.data() + n0 * g.image_size(), w.data(),
                                 nullptr, out.data() + n0 * g.k * g.pq(),
                                 buffers);
      } else if (pass == ConvPass::kBackwardData) {
        onednn::GroupGemmBackwardData(
            part, w.data(), dy.data() + n0 * g.k * g.pq(),
            out.data() + n0 * g.image_size(), buffers);
      } else {
        onednn::GroupGemmAddWeightGradient(part, x.data() + n0 * g.image_size(),
                                           dy.data() + n0 * g.k * g.pq(),
                                           dw.data(), buffers);
      }
    }
  };
  run();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) run();
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
             .count() /
         reps;
}

}  // namespace

static int Main(int argc, char** argv) {
  int reps = 5;
  CLI::App app{
      "oneDNN convolution speed by activation layout (any, nchw, nhwc) on "
      "the models' shapes, one thread: the measurement behind "
      "nn/ops/onednn/conv_plans.cc's layout rules.",
      "conv_layout_bench"};
  ringlet::cli::UseConventions(app);
  app.add_option("--reps", reps, "timed executions per measurement")
      ->check(CLI::Range(1, 1000));
  RINGLET_PARSE_FLAGS(app, argc, argv);
  omp_set_num_threads(1);

  // Images per call about as nn runs them at batch 256: forward and input
  // gradient in chunks of about 4,096 positions (at least 16 chunks),
  // weight gradients in calls of up to 65,536 positions, fewer where a GEMM
  // kernel's scratchpad would pass 8 MiB (the 4x4 stage: about 30 images).
  struct Case {
    Conv conv;
    ConvPass pass;
  };
  const std::vector<Case> cases = {
      {{"resnet 4x4 512->512 3x3", 32, 512, 4, 512, 3, 1, 1},
       ConvPass::kBackwardWeights},
      {{"resnet 4x4 512->512 3x3", 16, 512, 4, 512, 3, 1, 1},
       ConvPass::kForward},
      {{"resnet 4x4 512->512 3x3", 16, 512, 4, 512, 3, 1, 1},
       ConvPass::kBackwardData},
      {{"resnet 7x7 256->512 3x3 s2", 256, 256, 7, 512, 3, 2, 1},
       ConvPass::kBackwardWeights},
      {{"resnet 7x7 256->512 3x3 s2", 16, 256, 7, 512, 3, 2, 1},
       ConvPass::kForward},
      {{"resnet 7x7 256->512 3x3 s2", 16, 256, 7, 512, 3, 2, 1},
       ConvPass::kBackwardData},
      {{"resnet 7x7 256->512 1x1 s2", 256, 256, 7, 512, 1, 2, 0},
       ConvPass::kBackwardWeights},
      {{"resnet 7x7 256->512 1x1 s2", 16, 256, 7, 512, 1, 2, 0},
       ConvPass::kForward},
      {{"resnet 7x7 256->512 1x1 s2", 16, 256, 7, 512, 1, 2, 0},
       ConvPass::kBackwardData},
      {{"resnet 7x7 256->256 3x3", 80, 256, 7, 256, 3, 1, 1},
       ConvPass::kBackwardWeights},
      {{"resnet 7x7 256->256 3x3", 16, 256, 7, 256, 3, 1, 1},
       ConvPass::kForward},
      {{"resnet 7x7 256->256 3x3", 16, 256, 7, 256, 3, 1, 1},
       ConvPass::kBackwardData},
      {{"resnet 14x14 128->256 3x3 s2", 256, 128, 14, 256, 3, 2, 1},
       ConvPass::kBackwardWeights},
      {{"resnet 14x14 128->256 3x3 s2", 16, 128, 14, 256, 3, 2, 1},
       ConvPass::kForward},
      {{"resnet 14x14 128->256 3x3 s2", 16, 128, 14, 256, 3, 2, 1},
       ConvPass::kBackwardData},
      {{"resnet 14x14 128->128 3x3", 256, 128, 14, 128, 3, 1, 1},
       ConvPass::kBackwardWeights},
      {{"resnet 14x14 128->128 3x3", 16, 128, 14, 128, 3, 1, 1},
       ConvPass::kForward},
      {{"resnet 14x14 128->128 3x3", 16, 128, 14, 128, 3, 1, 1},
       ConvPass::kBackwardData},
      {{"resnet 28x28 64->128 3x3 s2", 80, 64, 28, 128, 3, 2, 1},
       ConvPass::kBackwardWeights},
      {{"resnet 28x28 64->64 3x3", 80, 64, 28, 64, 3, 1, 1},
       ConvPass::kBackwardWeights},
      {{"resnet 28x28 64->64 3x3", 5, 64, 28, 64, 3, 1, 1}, ConvPass::kForward},
      {{"resnet stem 1->64 3x3", 80, 1, 28, 64, 3, 1, 1},
       ConvPass::kBackwardWeights},
      {{"lenet 13x13 20->50 5x5", 256, 20, 13, 50, 5, 1, 0},
       ConvPass::kBackwardWeights},
      {{"lenet 13x13 20->50 5x5", 16, 20, 13, 50, 5, 1, 0}, ConvPass::kForward},
      {{"lenet 13x13 20->50 5x5", 16, 20, 13, 50, 5, 1, 0},
       ConvPass::kBackwardData},
  };

  std::mt19937 rng(1);
  std::printf(
      "GFLOP/s, kernel plus reorders from and to NCHW (kernel alone in "
      "brackets); one thread\n\n");
  std::printf(
      "| convolution | pass | images | any | nchw | nhwc | group gemm | "
      "ringlet asks for |\n"
      "|---|---|---|---|---|---|---|---|\n");
  for (const Case& c : cases) {
    const Conv& v = c.conv;
    const int p = (v.h + 2 * v.pad - v.r) / v.stride + 1;
    const double gflop = 2.0 * v.n * v.k * v.c * v.r * v.r * p * p / 1e9;
    std::printf("| %s | %s | %d |", v.name,
                c.pass == ConvPass::kForward        ? "forward"
                : c.pass == ConvPass::kBackwardData ? "input grad"
                                                    : "weight grad",
                v.n);
    for (Tag layout : {Tag::any, Tag::nchw, Tag::nhwc}) {
      const Timing t = Measure(v, c.pass, layout, reps, rng);
      std::printf(" %.0f (%.0f) %s |",
                  gflop / (t.kernel_ms + t.reorder_ms) * 1e3,
                  gflop / t.kernel_ms * 1e3, t.impl.c_str());
    }
    std::printf(" %.0f |", gflop / v.n * kGroupGemmImages /
                               GroupGemmMilliseconds(v, c.pass, reps, rng) *
                               1e3);
    const ringlet::nn::onednn::ConvShape shape{
        v.n, v.c, v.h, v.h, v.k, v.r, v.r, v.stride, v.pad, false};
    std::printf(
        " %s |\n",
        ringlet::nn::onednn::RunsAsGroupGemm(shape, c.pass)
            ? "group gemm"
            : LayoutName(ringlet::nn::onednn::ActivationLayout(shape, c.pass)));
    std::fflush(stdout);
  }
  return 0;
}

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("conv_layout_bench",
                               [&] { return Main(argc, argv); });
}
