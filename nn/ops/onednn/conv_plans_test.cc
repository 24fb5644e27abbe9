#include "nn/ops/onednn/conv_plans.h"

#include <gtest/gtest.h>

namespace ringlet::nn::onednn {
namespace {

// n, c, h, w, k, r, s, stride, pad, bias
constexpr ConvShape kBlock1{5, 64, 28, 28, 64, 3, 3, 1, 1, true};
constexpr ConvShape kBlock4{16, 512, 4, 4, 512, 3, 3, 1, 1, false};
constexpr ConvShape kBlock4Shortcut{16, 256, 7, 7, 512, 1, 1, 2, 0, true};
constexpr ConvShape kStem{5, 1, 28, 28, 64, 3, 3, 1, 1, true};
constexpr ConvShape kLeNetConv2{16, 20, 13, 13, 50, 5, 5, 1, 0, true};

bool ReadsOurLayout(const LayoutPair& pair) {
  return !pair.to_internal && pair.plain == pair.internal;
}

TEST(ConvPlans, LargePlanesRunInOneDnnsBlockedLayout) {
  const ForwardPlan& forward = GetForwardPlan(kBlock1);
  EXPECT_TRUE(forward.src.to_internal.has_value());
  EXPECT_TRUE(forward.dst.to_plain.has_value());
  const BackwardWeightsPlan& weights = GetBackwardWeightsPlan(kBlock1);
  EXPECT_TRUE(weights.src.to_internal.has_value());
}

// The shape rules in conv_plans.cc: weight gradients of small planes and of
// single-channel inputs, and strided 1x1 convolutions of small planes, run
// on our NCHW tensors as they are (oneDNN's GEMM-based kernels).
TEST(ConvPlans, SmallPlanesAndOneChannelTakeOurLayoutForWeightGradients) {
  for (const ConvShape& s : {kBlock4, kStem}) {
    const BackwardWeightsPlan& plan = GetBackwardWeightsPlan(s);
    EXPECT_TRUE(ReadsOurLayout(plan.src)) << "c " << s.c << " h " << s.h;
    EXPECT_TRUE(ReadsOurLayout(plan.diff_dst)) << "c " << s.c << " h " << s.h;
  }
  // Their forward passes stay blocked.
  EXPECT_TRUE(GetForwardPlan(kBlock4).src.to_internal.has_value());
}

TEST(ConvPlans, StridedOneByOneOnSmallPlanesTakesOurLayoutInEveryPass) {
  EXPECT_TRUE(ReadsOurLayout(GetForwardPlan(kBlock4Shortcut).src));
  EXPECT_FALSE(GetForwardPlan(kBlock4Shortcut).dst.to_plain.has_value());
  EXPECT_TRUE(ReadsOurLayout(GetBackwardDataPlan(kBlock4Shortcut).diff_dst));
  EXPECT_TRUE(ReadsOurLayout(GetBackwardWeightsPlan(kBlock4Shortcut).src));
}

TEST(ConvPlans, ChannelsOffTheBlockSizeRunInNhwc) {
  const dnnl::memory::desc nhwc({16, 20, 13, 13}, dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::nhwc);
  EXPECT_TRUE(GetForwardPlan(kLeNetConv2).src.internal == nhwc);
  EXPECT_TRUE(GetBackwardDataPlan(kLeNetConv2).diff_src.internal == nhwc);
  // Weight gradients stay blocked.
  EXPECT_FALSE(GetBackwardWeightsPlan(kLeNetConv2).src.internal == nhwc);
  EXPECT_TRUE(GetBackwardWeightsPlan(kLeNetConv2).src.to_internal.has_value());
}

// conv_plans.cc: only the weight gradients of small planes with large
// weights (the 4x4 stage) run as group products.
TEST(ConvPlans, GroupGemmTakesTheWeightGradientOfSmallPlanesLargeWeights) {
  EXPECT_TRUE(RunsAsGroupGemm(kBlock4, ConvPass::kBackwardWeights));
  EXPECT_FALSE(RunsAsGroupGemm(kBlock4, ConvPass::kForward));
  EXPECT_FALSE(RunsAsGroupGemm(kBlock4, ConvPass::kBackwardData));
  for (const ConvShape& s : {kBlock1, kBlock4Shortcut, kStem, kLeNetConv2}) {
    EXPECT_FALSE(RunsAsGroupGemm(s, ConvPass::kBackwardWeights)) << s.c;
  }
  AllowGroupGemm(false);
  EXPECT_FALSE(RunsAsGroupGemm(kBlock4, ConvPass::kBackwardWeights));
  AllowGroupGemm(true);
}

// About 1,024 positions per product, at least four groups a batch.
TEST(ConvPlans, GroupGemmImagesDependOnTheShapeOnly) {
  ConvShape batch = kBlock4;
  batch.n = 256;
  EXPECT_EQ(GroupGemmImages(batch), 64);
  batch.n = 64;
  EXPECT_EQ(GroupGemmImages(batch), 16);
  batch.n = 1;
  EXPECT_EQ(GroupGemmImages(batch), 1);
}

TEST(ConvPlans, SameShapeSamePlan) {
  EXPECT_EQ(&GetForwardPlan(kBlock1), &GetForwardPlan(kBlock1));
  ConvShape without_bias = kBlock1;
  without_bias.bias = false;
  // Backward plans ignore the bias.
  EXPECT_EQ(&GetBackwardDataPlan(kBlock1), &GetBackwardDataPlan(without_bias));
  EXPECT_NE(&GetForwardPlan(kBlock1), &GetForwardPlan(without_bias));
}

}  // namespace
}  // namespace ringlet::nn::onednn
