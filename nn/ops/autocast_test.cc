// The autocast policy op by op, on CPU devices: which type each op returns,
// and that its values are the reference's (float32 sums of bfloat16
// values, rounded once), so a kernel that skipped a rounding, or rounded
// twice, fails here.
#include "nn/ops/autocast.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "nn/compute_options.h"
#include "nn/ops/activation.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/cpu_conv_backend.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/linear.h"
#include "nn/ops/loss.h"
#include "nn/ops/op_threads.h"
#include "nn/ops/pooling.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::RandomTensor;

std::vector<float> Values(const Tensor& t) {
  const Tensor f = t.To(DType::kFloat32);
  return std::vector<float>(f.data(), f.data() + f.numel());
}

TEST(Autocast, OffByDefaultAndScoped) {
  EXPECT_EQ(autocast(), DType::kFloat32);
  {
    const auto on = ScopedCompute(&ComputeOptions::autocast, DType::kBFloat16);
    EXPECT_EQ(autocast(), DType::kBFloat16);
  }
  EXPECT_EQ(autocast(), DType::kFloat32);
  const Tensor x = RandomTensor({2, 3, 5, 5}, 1);
  const Tensor w = RandomTensor({4, 3, 3, 3}, 2);
  EXPECT_EQ(Conv2dForward(x, w, Tensor(), {}).dtype(), DType::kFloat32);
}

// Every element within one bfloat16 step (2^-7 of its magnitude) of
// `want`, past a floor for sums that cancel to almost nothing; most equal.
void ExpectWithinOneBf16Step(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = Values(got), w = Values(want);
  ASSERT_EQ(g.size(), w.size());
  double largest = 0;
  for (float v : w) largest = std::max<double>(largest, std::abs(v));
  int64_t equal = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_LE(std::abs(g[i] - w[i]),
              std::ldexp(std::abs(w[i]), -7) + 1e-5 * largest)
        << "element " << i << ": " << g[i] << " vs " << w[i];
    equal += g[i] == w[i];
  }
  EXPECT_GE(equal, static_cast<int64_t>(g.size() * 9 / 10));
}

// A convolution under autocast is the float32 convolution of the rounded
// operands, rounded once: bit for bit on the reference path (the Eigen
// backend), within a bfloat16 step where oneDNN's bfloat16 kernels sum in
// their own order.
void CheckConvolutionUnderAutocast(CpuConvBackend backend) {
  const auto conv_backend = ScopedCompute(&ComputeOptions::cpu_conv, backend);
  const bool exact = backend == CpuConvBackend::kEigen;
  const auto on = ScopedCompute(&ComputeOptions::autocast, DType::kBFloat16);
  const Tensor x = RandomTensor({2, 3, 7, 7}, 3);
  const Tensor w = RandomTensor({4, 3, 3, 3}, 4);
  const Tensor b = RandomTensor({4}, 5);
  const Conv2dParams params{1, 1};
  const Tensor y = Conv2dForward(x, w, b, params);
  EXPECT_EQ(y.dtype(), DType::kBFloat16);
  Tensor reference, exact_y;
  {
    const auto off = ScopedCompute(&ComputeOptions::autocast, DType::kFloat32);
    reference = Conv2dForward(RoundedToBf16(x), RoundedToBf16(w),
                              RoundedToBf16(b), params)
                    .To(DType::kBFloat16);
    // The same op on bfloat16 operands with autocast off: the same bits.
    const Tensor y_bf16_in =
        Conv2dForward(x.To(DType::kBFloat16), w.To(DType::kBFloat16),
                      b.To(DType::kBFloat16), params);
    EXPECT_EQ(Values(y_bf16_in), Values(y));
    exact_y = Conv2dForward(x, w, b, params);
  }
  if (exact) {
    EXPECT_EQ(Values(y), Values(reference));
  } else {
    ExpectWithinOneBf16Step(y, reference);
  }
  // Within bfloat16's rounding of the float32 result, but not equal to it.
  EXPECT_LT(testing::RelativeDifference(y, exact_y), 0.01);
  EXPECT_NE(Values(y), Values(exact_y));

  // Backward: parameter gradients are float32 sums of bfloat16 products,
  // the input gradient is in the input's type.
  const Tensor dy = RandomTensor(y.shape(), 6).To(DType::kBFloat16);
  const Conv2dGrads g = Conv2dBackward(x, w, true, dy, params);
  EXPECT_EQ(g.dx.dtype(), DType::kFloat32);
  EXPECT_EQ(g.dw.dtype(), DType::kFloat32);
  EXPECT_EQ(g.db.dtype(), DType::kFloat32);
  Conv2dGrads r;
  {
    const auto off = ScopedCompute(&ComputeOptions::autocast, DType::kFloat32);
    r = Conv2dBackward(RoundedToBf16(x), RoundedToBf16(w), true,
                       dy.To(DType::kFloat32), params);
  }
  const double sums = exact ? 0.0 : 1e-5;  // float32 sums in another order.
  EXPECT_LE(testing::RelativeDifference(g.dw, r.dw), sums);
  EXPECT_LE(testing::RelativeDifference(g.db, r.db), sums);
  ExpectWithinOneBf16Step(g.dx, RoundedToBf16(r.dx));
  const Conv2dGrads from_bf16 =
      Conv2dBackward(x.To(DType::kBFloat16), w, true, dy, params);
  EXPECT_EQ(from_bf16.dx.dtype(), DType::kBFloat16);
  ExpectWithinOneBf16Step(from_bf16.dx, r.dx.To(DType::kBFloat16));
}

TEST(Autocast, ConvolutionsRoundTheirOperandsAndResultOnce) {
  CheckConvolutionUnderAutocast(CpuConvBackend::kEigen);
}

// oneDNN's bfloat16 kernels on CPUs with AVX512_BF16 or AMX; its float32
// kernels on the rounded values (the reference) elsewhere.
TEST(Autocast, OneDnnConvolutionsStayWithinOneBf16Step) {
  if (!CpuConvHasOneDnn()) {
    GTEST_SKIP() << "this build has no oneDNN";
  }
  CheckConvolutionUnderAutocast(CpuConvBackend::kOneDnn);
}

TEST(Autocast, LinearLayersRoundAsConvolutionsDo) {
  const auto on = ScopedCompute(&ComputeOptions::autocast, DType::kBFloat16);
  const Tensor x = RandomTensor({5, 33}, 7);
  const Tensor w = RandomTensor({33, 10}, 8);
  const Tensor b = RandomTensor({10}, 9);
  const Tensor y = LinearForward(x, w, b);
  EXPECT_EQ(y.dtype(), DType::kBFloat16);
  const auto off = ScopedCompute(&ComputeOptions::autocast, DType::kFloat32);
  EXPECT_EQ(Values(y), Values(LinearForward(RoundedToBf16(x), RoundedToBf16(w),
                                            RoundedToBf16(b))
                                  .To(DType::kBFloat16)));
  const Tensor dy = RandomTensor({5, 10}, 10).To(DType::kBFloat16);
  const LinearGrads g = LinearBackward(x.To(DType::kBFloat16), w, true, dy);
  EXPECT_EQ(g.dx.dtype(), DType::kBFloat16);
  EXPECT_EQ(g.dw.dtype(), DType::kFloat32);
  const LinearGrads r = LinearBackward(RoundedToBf16(x), RoundedToBf16(w), true,
                                       dy.To(DType::kFloat32));
  EXPECT_EQ(Values(g.dw), Values(r.dw));
  EXPECT_EQ(Values(g.dx), Values(r.dx.To(DType::kBFloat16)));
  const LinearGrads from_f32 = LinearBackward(x, w, true, dy);
  EXPECT_EQ(from_f32.dx.dtype(), DType::kFloat32);
  EXPECT_EQ(Values(from_f32.dx), Values(RoundedToBf16(r.dx)));
}

// Batch norm keeps its input's type; statistics, running averages and the
// gamma and beta gradients stay float32.
TEST(Autocast, BatchNormKeepsItsInputsTypeAndFloat32Statistics) {
  const Tensor x = RandomTensor({4, 3, 5, 5}, 11).To(DType::kBFloat16);
  const Tensor gamma = RandomTensor({3}, 12, 0.5f, 1.5f);
  const Tensor beta = RandomTensor({3}, 13);
  BatchNormStats stats{Tensor({3}), Tensor({3})};
  stats.running_var.Fill(1.0f);
  BatchNormCache cache;
  const Tensor y = BatchNorm2dTrainForward(x, gamma, beta, &stats, &cache);
  EXPECT_EQ(y.dtype(), DType::kBFloat16);
  EXPECT_EQ(stats.running_mean.dtype(), DType::kFloat32);
  BatchNormStats ref_stats{Tensor({3}), Tensor({3})};
  ref_stats.running_var.Fill(1.0f);
  BatchNormCache ref_cache;
  const Tensor ref = BatchNorm2dTrainForward(x.To(DType::kFloat32), gamma, beta,
                                             &ref_stats, &ref_cache);
  EXPECT_EQ(Values(y), Values(ref.To(DType::kBFloat16)));
  EXPECT_EQ(Values(stats.running_mean), Values(ref_stats.running_mean));
  EXPECT_EQ(Values(stats.running_var), Values(ref_stats.running_var));
  const Tensor dy = RandomTensor(x.shape(), 14).To(DType::kBFloat16);
  const BatchNormGrads g = BatchNorm2dBackward(dy, gamma, cache);
  EXPECT_EQ(g.dx.dtype(), DType::kBFloat16);
  EXPECT_EQ(g.dgamma.dtype(), DType::kFloat32);
  const BatchNormGrads r =
      BatchNorm2dBackward(dy.To(DType::kFloat32), gamma, ref_cache);
  EXPECT_EQ(Values(g.dgamma), Values(r.dgamma));
  EXPECT_EQ(Values(g.dx), Values(r.dx.To(DType::kBFloat16)));
  const Tensor eval = BatchNorm2dEvalForward(x, gamma, beta, stats);
  EXPECT_EQ(eval.dtype(), DType::kBFloat16);
}

TEST(Autocast, ActivationsPoolsAndAddsKeepTheirType) {
  const Tensor x = RandomTensor({2, 3, 4, 4}, 15).To(DType::kBFloat16);
  const Tensor relu = ReluForward(x);
  EXPECT_EQ(relu.dtype(), DType::kBFloat16);
  EXPECT_EQ(Values(relu), Values(ReluForward(x.To(DType::kFloat32))));
  EXPECT_EQ(ReluBackward(relu, x).dtype(), DType::kBFloat16);
  EXPECT_EQ(AvgPool2dForward(x, 2, 2).dtype(), DType::kBFloat16);
  EXPECT_EQ(
      AvgPool2dBackward(x.shape(), AvgPool2dForward(x, 2, 2), 2, 2).dtype(),
      DType::kBFloat16);
  const Tensor pooled = GlobalAvgPoolForward(x);
  EXPECT_EQ(pooled.dtype(), DType::kBFloat16);
  EXPECT_EQ(
      Values(pooled),
      Values(GlobalAvgPoolForward(x.To(DType::kFloat32)).To(DType::kBFloat16)));
  EXPECT_EQ(GlobalAvgPoolBackward(x.shape(), pooled).dtype(), DType::kBFloat16);
  EXPECT_EQ(Add(x, x).dtype(), DType::kBFloat16);
  EXPECT_EQ(Values(Add(x, x)), Values(Add(x, x.To(DType::kFloat32))));
  EXPECT_EQ(Add(x, x.To(DType::kFloat32)).dtype(), DType::kFloat32);
  EXPECT_EQ(Flatten(x).dtype(), DType::kBFloat16);
}

// Average pooling on bfloat16 rows: the float32 kernels' values on the
// widened input, rounded once, for LeNet's 2x2 windows, overlapping
// windows and windows that leave an edge uncovered; forward and backward,
// with tensors large enough for the op threads and runs of planes.
TEST(Autocast, Bf16PoolingMatchesTheFloat32KernelsRoundedOnce) {
  struct Window {
    int kernel, stride;
  };
  const auto threads = ScopedCompute(&ComputeOptions::op_threads, 2);
  for (const Window& win : {Window{2, 2}, Window{3, 2}, Window{3, 3}}) {
    const Tensor x = RandomTensor({64, 6, 29, 29}, 30).To(DType::kBFloat16);
    const Tensor y = AvgPool2dForward(x, win.kernel, win.stride);
    EXPECT_EQ(y.dtype(), DType::kBFloat16);
    EXPECT_EQ(Values(y),
              Values(AsDType(AvgPool2dForward(AsDType(x, DType::kFloat32),
                                              win.kernel, win.stride),
                             DType::kBFloat16)))
        << win.kernel << "x" << win.kernel << " stride " << win.stride;
    const Tensor dy = RandomTensor(y.shape(), 31).To(DType::kBFloat16);
    const Tensor dx = AvgPool2dBackward(x.shape(), dy, win.kernel, win.stride);
    EXPECT_EQ(dx.dtype(), DType::kBFloat16);
    EXPECT_EQ(Values(dx),
              Values(AsDType(
                  AvgPool2dBackward(x.shape(), AsDType(dy, DType::kFloat32),
                                    win.kernel, win.stride),
                  DType::kBFloat16)))
        << win.kernel << "x" << win.kernel << " stride " << win.stride;
  }
}

// The bfloat16 kernels of ReLU and add (bits, no float32 copy) against the
// float32 kernels, on the values where a sign test can go wrong: -0, the
// infinities, NaN, the smallest subnormal.
TEST(Autocast, Bf16ReluAndAddKernelsMatchFloat32s) {
  const std::vector<uint16_t> bits = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0,
                                      0xFFC0, 0x3F80, 0xBF80, 0x0001, 0x8001};
  Tensor x({static_cast<int64_t>(bits.size())}, Device::Cpu(),
           DType::kBFloat16);
  std::copy(bits.begin(), bits.end(), x.bf16_data());
  const Tensor y = ReluForward(x);
  const Tensor want =
      AsDType(ReluForward(AsDType(x, DType::kFloat32)), DType::kBFloat16);
  EXPECT_EQ(
      std::vector<uint16_t>(y.bf16_data(), y.bf16_data() + bits.size()),
      std::vector<uint16_t>(want.bf16_data(), want.bf16_data() + bits.size()));
  const Tensor dy = RandomTensor(x.shape(), 17).To(DType::kBFloat16);
  const Tensor dx = ReluBackward(x, dy);
  const Tensor dx_want =
      ReluBackward(AsDType(x, DType::kFloat32), AsDType(dy, DType::kFloat32));
  EXPECT_EQ(Values(dx), Values(dx_want));
  // A sum of two bfloat16 tensors large enough for the op threads and a
  // ragged tail, rounded once.
  const Tensor a = RandomTensor({3, 70001}, 18).To(DType::kBFloat16);
  const Tensor b =
      RandomTensor({3, 70001}, 19, -1e-3f, 1e-3f).To(DType::kBFloat16);
  EXPECT_EQ(Values(Add(a, b)), Values(AsDType(Add(AsDType(a, DType::kFloat32),
                                                  AsDType(b, DType::kFloat32)),
                                              DType::kBFloat16)));
}

// The loss is float32 whatever the logits, and so is their gradient.
TEST(Autocast, TheLossIsFloat32) {
  const Tensor logits = RandomTensor({6, 10}, 16, -3, 3).To(DType::kBFloat16);
  const std::vector<int32_t> labels = {0, 3, 9, 1, 1, 7};
  const LossResult r =
      SoftmaxCrossEntropy(logits, labels.data(), Reduction::kMean);
  const LossResult f = SoftmaxCrossEntropy(logits.To(DType::kFloat32),
                                           labels.data(), Reduction::kMean);
  EXPECT_EQ(r.loss, f.loss);
  EXPECT_EQ(r.correct, f.correct);
  EXPECT_EQ(r.dlogits.dtype(), DType::kFloat32);
  EXPECT_EQ(Values(r.dlogits), Values(f.dlogits));
}

// What stays float32 says so: the optimizer's sums, gradient accumulation.
TEST(Autocast, Float32OnlyOpsRefuseBf16ByName) {
  Tensor grad({3});
  const Tensor bf16({3}, Device::Cpu(), DType::kBFloat16);
  try {
    AddInPlace(grad, bf16);
    FAIL() << "AddInPlace summed bfloat16 into float32";
  } catch (const DTypeError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(
                              "add: input 2 (shape [3]) is bfloat16; add "
                              "takes float32 only"));
  }
  EXPECT_THROW(ScaleInPlace(const_cast<Tensor&>(bf16), 2.0f), DTypeError);
  // Two activation gradients (a residual's branches) add in their type.
  Tensor sum = Tensor::FromVector({3}, {1, 2, 3}).To(DType::kBFloat16);
  AddInPlace(sum,
             Tensor::FromVector({3}, {0.5f, 0.25f, 1}).To(DType::kBFloat16));
  EXPECT_EQ(sum.dtype(), DType::kBFloat16);
  EXPECT_EQ(Values(sum), (std::vector<float>{1.5f, 2.25f, 4}));
}

}  // namespace
}  // namespace ringlet::nn
