// oneDNN convolution primitives for one shape, created once and reused:
// creating a primitive descriptor chooses an implementation for the running
// CPU (tens of microseconds); executing one is what a step should cost.
//
// Shape letters as in nn/ops/conv2d.h: a chunk of N images of C x H x W,
// K output channels, R x S kernel, P x Q output. Our tensors are plain
// (NCHW activations, KCRS weights); the primitives choose their own layouts
// (`any`, blocked by 8 or 16 channels on x86), and each plan carries the
// reorders between the two, absent where the layouts agree.
#ifndef RINGLET_NN_OPS_ONEDNN_CONV_PLANS_H_
#define RINGLET_NN_OPS_ONEDNN_CONV_PLANS_H_

#include <cstdint>
#include <optional>

#include "oneapi/dnnl/dnnl.hpp"

namespace ringlet::nn::onednn {

struct ConvShape {
  int64_t n, c, h, w, k, r, s, stride, pad;
  bool bias;
  // bfloat16 activations and weights (float32 sums, bias and weight
  // gradients), else float32 throughout.
  bool bf16 = false;
  // The forward pass ends with a ReLU (ReluRunsAsPostOp); backward passes
  // take the gradient through it already.
  bool relu = false;
  int64_t p() const { return (h + 2 * pad - r) / stride + 1; }
  int64_t q() const { return (w + 2 * pad - s) / stride + 1; }
  bool operator<(const ConvShape& o) const;
};

// A user's plain buffer and the primitive's layout of the same values.
struct LayoutPair {
  dnnl::memory::desc plain, internal;
  std::optional<dnnl::reorder> to_internal, to_plain;  // absent when equal
  // Builds the reorders needed: to_internal for inputs, to_plain for outputs.
  static LayoutPair For(const dnnl::memory::desc& plain,
                        const dnnl::memory::desc& internal, bool input);
};

struct ForwardPlan {
  dnnl::convolution_forward primitive;
  LayoutPair src, weights, dst;
  dnnl::memory::desc bias;  // zero desc without bias
  dnnl::memory::desc scratchpad;
};

struct BackwardDataPlan {
  dnnl::convolution_backward_data primitive;
  LayoutPair diff_dst, weights, diff_src;
  dnnl::memory::desc scratchpad;
};

// Weights only: the bias gradient is a sum nn does itself (in double).
struct BackwardWeightsPlan {
  dnnl::convolution_backward_weights primitive;
  LayoutPair src, diff_dst;
  // Adds a chunk's weight gradient (the primitive's layout) into a plain
  // KCRS sum: a reorder with a sum post-op.
  dnnl::reorder accumulate_diff_weights;
  dnnl::memory::desc diff_weights, plain_weights;
  dnnl::memory::desc scratchpad;
};

enum class ConvPass { kForward, kBackwardData, kBackwardWeights };
// The activation layout a pass of `shape` asks oneDNN for: `any` (its
// blocked layout and direct kernels), `nchw` (ours as it is: its GEMM
// kernels) or `nhwc`; rules on shapes, measured by conv_layout_bench.
dnnl::memory::format_tag ActivationLayout(const ConvShape& shape,
                                          ConvPass pass);

// Whether a forward pass with `relu` runs it as oneDNN's post-op: not on
// the plain-layout (GEMM-based) kernels, whose ReLU writes -0 where
// ReluForward writes +0 (the caller runs ReluForward after those).
bool ReluRunsAsPostOp(const ConvShape& shape);

// Whether a pass of `shape` runs as one oneDNN sgemm per group of images
// (conv_gemm.h) instead of a convolution primitive: a rule on shapes,
// measured by conv_step_bench (float32 only: oneDNN's sgemm). Only weight
// gradients take it today, and
// only they are dispatched to it (conv2d_onednn.cc); the forward and
// input-gradient group functions stay for the benchmarks' comparison.
bool RunsAsGroupGemm(const ConvShape& shape, ConvPass pass);
// false: every pass through oneDNN's convolution primitives (tests and
// benchmarks compare the two paths). Process-wide; default true.
void AllowGroupGemm(bool allowed);
// Images per group on that path, from the shape alone (so the output and
// the input gradient do not depend on the thread count): about
// kGroupGemmColumns positions per product, and at least four groups a
// batch for the op threads to share.
int64_t GroupGemmImages(const ConvShape& shape);

// The CPU engine every plan runs on.
const dnnl::engine& CpuEngine();

// Plans for a shape from a process-wide cache (thread-safe; the returned
// plan lives until the process ends). Throws std::runtime_error naming the
// shape when oneDNN has no implementation for it.
const ForwardPlan& GetForwardPlan(const ConvShape& shape);
const BackwardDataPlan& GetBackwardDataPlan(const ConvShape& shape);
const BackwardWeightsPlan& GetBackwardWeightsPlan(const ConvShape& shape);

}  // namespace ringlet::nn::onednn

#endif  // RINGLET_NN_OPS_ONEDNN_CONV_PLANS_H_
