// Sigmoid, tanh and softmax against their formulas and known values, their
// gradients against finite differences, saturation without NaNs, and
// bfloat16 as the float32 values rounded once.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/ops/autocast.h"
#include "nn/ops/sigmoid_tanh.h"
#include "nn/ops/softmax.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::ExpectGradientNear;
using testing::Project;
using testing::RandomTensor;

TEST(SigmoidTanh, FormulasKnownValuesAndSaturation) {
  const Tensor x = RandomTensor({3, 7}, 1, -6, 6);
  const Tensor s = SigmoidForward(x), t = TanhForward(x);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.data()[i];
    EXPECT_NEAR(s.data()[i], 1 / (1 + std::exp(-v)), 1e-6);
    EXPECT_NEAR(t.data()[i], std::tanh(v), 1e-6);
  }
  const Tensor edges = Tensor::FromVector({4}, {0.0f, 1.0f, -100.0f, 100.0f});
  const Tensor se = SigmoidForward(edges), te = TanhForward(edges);
  EXPECT_EQ(se.data()[0], 0.5f);
  EXPECT_NEAR(se.data()[1], 0.7310586, 1e-6);
  EXPECT_EQ(se.data()[2], 0.0f);
  EXPECT_EQ(se.data()[3], 1.0f);
  EXPECT_NEAR(te.data()[1], 0.7615942, 1e-6);
  EXPECT_EQ(te.data()[2], -1.0f);
  EXPECT_EQ(te.data()[3], 1.0f);
}

TEST(SigmoidTanh, BackwardFromTheOutputMatchesFiniteDifferences) {
  Tensor x = RandomTensor({4, 5}, 2, -3, 3);
  const Tensor r = RandomTensor({4, 5}, 3);
  ExpectGradientNear("sigmoid dx", x, SigmoidBackward(SigmoidForward(x), r),
                     [&] { return Project(SigmoidForward(x), r); });
  ExpectGradientNear("tanh dx", x, TanhBackward(TanhForward(x), r),
                     [&] { return Project(TanhForward(x), r); });
}

TEST(Softmax, RowsAreProbabilitiesOverTheLastAxis) {
  // softmax([0, ln 3]) = [1/4, 3/4], and shifted by 1000 (no overflow).
  const Tensor y = SoftmaxForward(Tensor::FromVector(
      {2, 2}, {0.0f, std::log(3.0f), 1000.0f, 1000.0f + std::log(3.0f)}));
  EXPECT_NEAR(y.data()[0], 0.25, 1e-6);
  EXPECT_NEAR(y.data()[1], 0.75, 1e-6);
  EXPECT_NEAR(y.data()[2], 0.25, 1e-4);
  EXPECT_NEAR(y.data()[3], 0.75, 1e-4);
  const Tensor x = RandomTensor({2, 3, 11}, 4, -5, 5);
  const Tensor z = SoftmaxForward(x);
  ASSERT_EQ(z.shape(), x.shape());
  for (int64_t row = 0; row < 6; ++row) {
    double sum = 0;
    for (int64_t j = 0; j < 11; ++j) {
      const float p = z.data()[row * 11 + j];
      EXPECT_GT(p, 0.0f);
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-6) << "row " << row;
  }
}

TEST(Softmax, BackwardMatchesFiniteDifferences) {
  Tensor x = RandomTensor({3, 2, 9}, 5, -3, 3);
  const Tensor r = RandomTensor(x.shape(), 6);
  ExpectGradientNear("softmax dx", x, SoftmaxBackward(SoftmaxForward(x), r),
                     [&] { return Project(SoftmaxForward(x), r); });
}

TEST(Softmax, AScalarAndAnotherShapeAreRefused) {
  EXPECT_THROW(SoftmaxForward(Tensor::FromVector({}, {1.0f})), ShapeError);
  EXPECT_THROW(SoftmaxBackward(Tensor({2, 3}), Tensor({3, 2})), ShapeError);
}

TEST(SigmoidTanhSoftmax, Bfloat16IsTheFloat32ValueRoundedOnce) {
  const Tensor x = AsDType(RandomTensor({4, 16}, 7, -3, 3), DType::kBFloat16);
  const Tensor dy = AsDType(RandomTensor({4, 16}, 8), DType::kBFloat16);
  const Tensor xf = AsDType(x, DType::kFloat32);
  const Tensor dyf = AsDType(dy, DType::kFloat32);
  struct Op {
    const char* name;
    Tensor (*forward)(const Tensor&);
    Tensor (*backward)(const Tensor&, const Tensor&);
  };
  for (const Op& op : {Op{"sigmoid", SigmoidForward, SigmoidBackward},
                       Op{"tanh", TanhForward, TanhBackward},
                       Op{"softmax", SoftmaxForward, SoftmaxBackward}}) {
    const Tensor y = op.forward(x);
    ASSERT_EQ(y.dtype(), DType::kBFloat16) << op.name;
    const Tensor want = AsDType(op.forward(xf), DType::kBFloat16);
    const Tensor dx = op.backward(y, dy);
    ASSERT_EQ(dx.dtype(), DType::kBFloat16) << op.name;
    const Tensor want_dx = AsDType(
        op.backward(AsDType(y, DType::kFloat32), dyf), DType::kBFloat16);
    for (int64_t i = 0; i < x.numel(); ++i) {
      EXPECT_EQ(y.bf16_data()[i], want.bf16_data()[i]) << op.name << " " << i;
      EXPECT_EQ(dx.bf16_data()[i], want_dx.bf16_data()[i])
          << op.name << " " << i;
    }
  }
}

}  // namespace
}  // namespace ringlet::nn
