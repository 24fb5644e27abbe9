// GELU against its formula (PyTorch's exact form), its gradient against
// finite differences, bfloat16 as the float32 values rounded once.
#include "nn/ops/gelu.h"

#include <gtest/gtest.h>

#include <cmath>

#include "nn/ops/autocast.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::ExpectGradientNear;
using testing::Project;
using testing::RandomTensor;

TEST(Gelu, ForwardIsXTimesTheNormalCdf) {
  const Tensor x = RandomTensor({3, 7}, 1, -4, 4);
  const Tensor y = GeluForward(x);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.data()[i];
    EXPECT_NEAR(y.data()[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))),
                1e-6);
  }
  // Known values: GELU(1) = 0.841345, GELU(-1) = -0.158655.
  const Tensor y1 = GeluForward(Tensor::FromVector({2}, {1.0f, -1.0f}));
  EXPECT_NEAR(y1.data()[0], 0.8413447, 1e-6);
  EXPECT_NEAR(y1.data()[1], -0.1586553, 1e-6);
}

TEST(Gelu, BackwardMatchesFiniteDifferences) {
  Tensor x = RandomTensor({4, 5}, 2, -3, 3);
  const Tensor r = RandomTensor({4, 5}, 3);
  const Tensor dx = GeluBackward(x, r);
  ExpectGradientNear("gelu dx", x, dx,
                     [&] { return Project(GeluForward(x), r); });
}

TEST(Gelu, Bfloat16IsTheFloat32ValueRoundedOnce) {
  const Tensor x = AsDType(RandomTensor({64}, 4, -3, 3), DType::kBFloat16);
  const Tensor dy = AsDType(RandomTensor({64}, 5), DType::kBFloat16);
  const Tensor y = GeluForward(x);
  ASSERT_EQ(y.dtype(), DType::kBFloat16);
  const Tensor want =
      AsDType(GeluForward(AsDType(x, DType::kFloat32)), DType::kBFloat16);
  const Tensor dx = GeluBackward(x, dy);
  ASSERT_EQ(dx.dtype(), DType::kBFloat16);
  const Tensor want_dx = AsDType(
      GeluBackward(AsDType(x, DType::kFloat32), AsDType(dy, DType::kFloat32)),
      DType::kBFloat16);
  for (int64_t i = 0; i < 64; ++i) {
    EXPECT_EQ(y.bf16_data()[i], want.bf16_data()[i]) << i;
    EXPECT_EQ(dx.bf16_data()[i], want_dx.bf16_data()[i]) << i;
  }
}

TEST(Gelu, AGradientOfAnotherShapeIsRefused) {
  EXPECT_THROW(GeluBackward(Tensor({2, 3}), Tensor({3, 2})), ShapeError);
}

}  // namespace
}  // namespace ringlet::nn
