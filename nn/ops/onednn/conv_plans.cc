#include "nn/ops/onednn/conv_plans.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace ringlet::nn::onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

// The type of a shape's activations and weights.
memory::data_type TypeOf(const ConvShape& s) {
  return s.bf16 ? memory::data_type::bf16 : kF32;
}
memory::desc Desc(const memory::dims& dims, memory::data_type type,
                  Tag layout) {
  return memory::desc(dims, type, layout);
}
// Our tensors' layouts: NCHW activations, KCRS weights.
memory::desc Plain(const memory::dims& dims, memory::data_type type) {
  return Desc(dims, type, Tag::nchw);
}
memory::desc PlainWeights(const memory::dims& dims, memory::data_type type) {
  return Desc(dims, type, Tag::oihw);
}

}  // namespace

// `any` gets oneDNN's blocked layout (channels in groups of 8 or 16) and
// its direct kernels, fastest for most of our shapes; plain NCHW gets its
// GEMM-based kernels (im2col, then a matrix product over images and
// positions), faster where the direct kernels have little work per output
// row; NHWC gets direct kernels without channel blocks. Measured on an
// AVX2 machine by conv_layout_bench (docs/results.md, "CPU convolutions":
// 1.2-4x for the cases below); a rule on shapes, not a timing, so a shape
// always runs the same kernels.
Tag ActivationLayout(const ConvShape& s, ConvPass pass) {
  const int64_t plane = s.p() * s.q();
  // bfloat16: the blocked layouts' direct kernels (jit_bf16) everywhere
  // but a first layer's weight gradient. oneDNN's GEMM-based bfloat16
  // weight gradient ran ResNet-18's small planes 3.5x slower than the
  // direct kernel (AMD EPYC with AVX512_BF16, train_bench batch 64).
  if (s.bf16) {
    return pass == ConvPass::kBackwardWeights && s.c < 8 ? Tag::nchw : Tag::any;
  }
  // Strided 1x1 convolutions on small planes (ResNet's last shortcut):
  // oneDNN's 1x1 kernels do not take them, its general direct kernel runs
  // them at a third of GEMM's speed.
  if (s.r == 1 && s.s == 1 && s.stride > 1 && plane <= 49) return Tag::nchw;
  if (pass == ConvPass::kBackwardWeights) {
    // Blocked layouts pad channels to a block: one input channel (a first
    // layer) becomes 8.
    if (s.c < 8) return Tag::nchw;
    // Weight gradients reduce over positions; direct kernels split that
    // reduction by output rows, which small planes make short.
    // (14x14 planes as well was measured both ways; with calls of 65,536
    // positions the direct kernels win there.)
    if (plane <= 49) return Tag::nchw;
    return Tag::any;
  }
  // Channel counts that are not multiples of 8 (the scratch LeNet's 20 and
  // 50): blocked layouts pad them to whole blocks (20 -> 24, 50 -> 56: a
  // third more work); NHWC kernels do not pad, 10-20% faster for forward
  // and input gradient (weight gradients stay blocked, faster still).
  if (s.c >= 8 && (s.c % 8 != 0 || s.k % 8 != 0)) return Tag::nhwc;
  return Tag::any;
}

bool ReluRunsAsPostOp(const ConvShape& s) {
  return s.relu && ActivationLayout(s, ConvPass::kForward) != Tag::nchw;
}

// Weight gradients of small planes with large weights (ResNet-18's 4x4
// stage: 512 x 4608). oneDNN's GEMM-based kernel, which the layout rule
// picks for small planes, makes one product per image into the whole
// weight gradient, so every 16 positions stream 9 MiB through memory: 55
// GFLOP/s in a step, and slower still beside a second thread. One product
// per group of images does that once per group: that stage's weight
// gradient -26% of its time (conv_step_bench --compare_group_gemm). Other
// shapes and passes were measured as well and stay with oneDNN's
// primitives: the group path was as fast or slower there (unfolding and
// folding back cost what the longer products gain; docs/results.md).
namespace {
std::atomic<bool> group_gemm_allowed{true};
constexpr int64_t kGroupGemmMinWeightFloats = int64_t{2} << 20;  // 8 MiB
}  // namespace

void AllowGroupGemm(bool allowed) { group_gemm_allowed = allowed; }

bool RunsAsGroupGemm(const ConvShape& s, ConvPass pass) {
  return group_gemm_allowed && !s.bf16 && pass == ConvPass::kBackwardWeights &&
         s.p() * s.q() <= 49 &&
         s.k * s.c * s.r * s.s >= kGroupGemmMinWeightFloats;
}

namespace {
constexpr int64_t kGroupGemmColumns = 1024;
constexpr int64_t kGroupGemmMinGroups = 4;
}  // namespace

int64_t GroupGemmImages(const ConvShape& s) {
  const int64_t by_size = std::max<int64_t>(
      1, kGroupGemmColumns / std::max<int64_t>(1, s.p() * s.q()));
  const int64_t by_count =
      (s.n + kGroupGemmMinGroups - 1) / kGroupGemmMinGroups;
  return std::max<int64_t>(1, std::min(by_size, by_count));
}

namespace {

struct Descs {
  memory::dims src, weights, dst, bias, strides, padding;
};

Descs DescsOf(const ConvShape& s) {
  // oneDNN pads on both sides; with floor division in P and Q a right pad
  // equal to the left one gives the same output size as ours.
  return {{s.n, s.c, s.h, s.w},     {s.k, s.c, s.r, s.s},
          {s.n, s.k, s.p(), s.q()}, {s.k},
          {s.stride, s.stride},     {s.pad, s.pad}};
}

std::string Describe(const ConvShape& s) {
  return std::string(s.bf16 ? "bfloat16 " : "") + "input [" +
         std::to_string(s.n) + ", " + std::to_string(s.c) + ", " +
         std::to_string(s.h) + ", " + std::to_string(s.w) + "], weight [" +
         std::to_string(s.k) + ", " + std::to_string(s.c) + ", " +
         std::to_string(s.r) + ", " + std::to_string(s.s) + "], stride " +
         std::to_string(s.stride) + ", padding " + std::to_string(s.pad);
}

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// The forward pass's descriptor; the backward passes give theirs (as the
// hint oneDNN asks for) with their own activation layout.
dnnl::convolution_forward::primitive_desc ForwardDesc(const ConvShape& s,
                                                      Tag layout) {
  const Descs d = DescsOf(s);
  const memory::data_type type = TypeOf(s);
  // The bias is float32 in both types (oneDNN adds it to the float32 sum).
  const auto desc =
      s.bias
          ? dnnl::convolution_forward::desc(
                dnnl::prop_kind::forward_training,
                dnnl::algorithm::convolution_direct, Desc(d.src, type, layout),
                Desc(d.weights, type, Tag::any), Desc(d.bias, kF32, Tag::x),
                Desc(d.dst, type, layout), d.strides, d.padding, d.padding)
          : dnnl::convolution_forward::desc(
                dnnl::prop_kind::forward_training,
                dnnl::algorithm::convolution_direct, Desc(d.src, type, layout),
                Desc(d.weights, type, Tag::any), Desc(d.dst, type, layout),
                d.strides, d.padding, d.padding);
  dnnl::primitive_attr attr = UserScratchpad();
  if (s.relu) {
    // max(x, 0) on the float32 sum before the result is written (and
    // rounded): ReluForward's values, the signs of zeros too, where
    // ReluRunsAsPostOp.
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return {desc, attr, CpuEngine()};
}

std::unique_ptr<ForwardPlan> MakeForwardPlan(const ConvShape& s) {
  const Descs d = DescsOf(s);
  const memory::data_type type = TypeOf(s);
  const auto pd = ForwardDesc(s, ActivationLayout(s, ConvPass::kForward));
  return std::make_unique<ForwardPlan>(ForwardPlan{
      dnnl::convolution_forward(pd),
      LayoutPair::For(Plain(d.src, type), pd.src_desc(), true),
      LayoutPair::For(PlainWeights(d.weights, type), pd.weights_desc(), true),
      LayoutPair::For(Plain(d.dst, type), pd.dst_desc(), false),
      s.bias ? pd.bias_desc() : memory::desc(), pd.scratchpad_desc()});
}

std::unique_ptr<BackwardDataPlan> MakeBackwardDataPlan(const ConvShape& s) {
  const Descs d = DescsOf(s);
  const memory::data_type type = TypeOf(s);
  const Tag layout = ActivationLayout(s, ConvPass::kBackwardData);
  const dnnl::convolution_backward_data::desc desc(
      dnnl::algorithm::convolution_direct, Desc(d.src, type, layout),
      Desc(d.weights, type, Tag::any), Desc(d.dst, type, layout), d.strides,
      d.padding, d.padding);
  const dnnl::convolution_backward_data::primitive_desc pd(
      desc, UserScratchpad(), CpuEngine(), ForwardDesc(s, layout));
  return std::make_unique<BackwardDataPlan>(BackwardDataPlan{
      dnnl::convolution_backward_data(pd),
      LayoutPair::For(Plain(d.dst, type), pd.diff_dst_desc(), true),
      LayoutPair::For(PlainWeights(d.weights, type), pd.weights_desc(), true),
      LayoutPair::For(Plain(d.src, type), pd.diff_src_desc(), false),
      pd.scratchpad_desc()});
}

std::unique_ptr<BackwardWeightsPlan> MakeBackwardWeightsPlan(
    const ConvShape& s) {
  const Descs d = DescsOf(s);
  const memory::data_type type = TypeOf(s);
  // No bias: nn sums the bias gradient itself, in double. The weight
  // gradient is float32 in both types (the master weights' type).
  const Tag layout = ActivationLayout(s, ConvPass::kBackwardWeights);
  const dnnl::convolution_backward_weights::desc desc(
      dnnl::algorithm::convolution_direct, Desc(d.src, type, layout),
      Desc(d.weights, kF32, Tag::any), Desc(d.dst, type, layout), d.strides,
      d.padding, d.padding);
  const dnnl::convolution_backward_weights::primitive_desc pd(
      desc, UserScratchpad(), CpuEngine(), ForwardDesc(s, layout));
  const memory::desc plain_weights = PlainWeights(d.weights, kF32);
  dnnl::post_ops sum;
  sum.append_sum(1.0f);
  dnnl::primitive_attr accumulate;
  accumulate.set_post_ops(sum);
  return std::make_unique<BackwardWeightsPlan>(BackwardWeightsPlan{
      dnnl::convolution_backward_weights(pd),
      LayoutPair::For(Plain(d.src, type), pd.src_desc(), true),
      LayoutPair::For(Plain(d.dst, type), pd.diff_dst_desc(), true),
      dnnl::reorder(dnnl::reorder::primitive_desc(
          CpuEngine(), pd.diff_weights_desc(), CpuEngine(), plain_weights,
          accumulate)),
      pd.diff_weights_desc(), plain_weights, pd.scratchpad_desc()});
}

// Plans are never evicted: a model has a few dozen shapes.
template <typename Plan, typename Make>
const Plan& Cached(std::map<ConvShape, std::unique_ptr<Plan>>& cache,
                   const ConvShape& shape, Make make) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(shape);
  if (it == cache.end()) {
    try {
      it = cache.emplace(shape, make(shape)).first;
    } catch (const dnnl::error& e) {
      throw std::runtime_error("conv2d (oneDNN): no implementation for " +
                               Describe(shape) + ": " + e.what() +
                               "; RINGLET_CPU_CONV=eigen selects the Eigen "
                               "convolution");
    }
  }
  return *it->second;
}

}  // namespace

bool ConvShape::operator<(const ConvShape& o) const {
  return std::tie(n, c, h, w, k, r, s, stride, pad, bias, bf16, relu) <
         std::tie(o.n, o.c, o.h, o.w, o.k, o.r, o.s, o.stride, o.pad, o.bias,
                  o.bf16, o.relu);
}

LayoutPair LayoutPair::For(const memory::desc& plain,
                           const memory::desc& internal, bool input) {
  LayoutPair pair{plain, internal, std::nullopt, std::nullopt};
  if (plain != internal) {
    if (input) {
      pair.to_internal.emplace(dnnl::reorder::primitive_desc(
          CpuEngine(), plain, CpuEngine(), internal));
    } else {
      pair.to_plain.emplace(dnnl::reorder::primitive_desc(CpuEngine(), internal,
                                                          CpuEngine(), plain));
    }
  }
  return pair;
}

const dnnl::engine& CpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

const ForwardPlan& GetForwardPlan(const ConvShape& shape) {
  static std::map<ConvShape, std::unique_ptr<ForwardPlan>> cache;
  return Cached(cache, shape, MakeForwardPlan);
}

const BackwardDataPlan& GetBackwardDataPlan(const ConvShape& shape) {
  static std::map<ConvShape, std::unique_ptr<BackwardDataPlan>> cache;
  // The bias plays no part in the input gradient: one plan for both.
  ConvShape key = shape;
  key.bias = false;
  key.relu = false;
  return Cached(cache, key, MakeBackwardDataPlan);
}

const BackwardWeightsPlan& GetBackwardWeightsPlan(const ConvShape& shape) {
  static std::map<ConvShape, std::unique_ptr<BackwardWeightsPlan>> cache;
  // No bias either: nn sums the bias gradient itself.
  ConvShape key = shape;
  key.bias = false;
  key.relu = false;
  return Cached(cache, key, MakeBackwardWeightsPlan);
}

}  // namespace ringlet::nn::onednn
