#include "nn/optim/grad_clip.h"

#include <cmath>

#include "gtest/gtest.h"

namespace ringlet::nn {
namespace {

Tensor Filled(std::vector<int64_t> shape, std::vector<float> values) {
  Tensor t(shape);
  for (size_t i = 0; i < values.size(); ++i) t.data()[i] = values[i];
  return t;
}

TEST(ClipGradNorm, ScalesEveryGradientToTheGlobalNorm) {
  // Norm over both tensors: sqrt(9 + 16 + 144) = 13.
  Tensor a = Filled({2}, {3, 4});
  Tensor b = Filled({1}, {12});
  const double before = ClipGradNorm({&a, &b}, 6.5);
  EXPECT_DOUBLE_EQ(before, 13.0);
  const float scale = static_cast<float>(6.5 / (13.0 + 1e-6));
  EXPECT_FLOAT_EQ(a.data()[0], 3 * scale);
  EXPECT_FLOAT_EQ(a.data()[1], 4 * scale);
  EXPECT_FLOAT_EQ(b.data()[0], 12 * scale);
  EXPECT_NEAR(GlobalNorm({&a, &b}), 6.5, 1e-5);
}

TEST(ClipGradNorm, LeavesSmallGradientsAlone) {
  Tensor a = Filled({2}, {0.3f, 0.4f});
  EXPECT_NEAR(ClipGradNorm({&a}, 1.0), 0.5, 1e-7);
  EXPECT_EQ(a.data()[0], 0.3f);
  EXPECT_EQ(a.data()[1], 0.4f);
}

TEST(ClipGradNorm, RefusesANonPositiveLimit) {
  Tensor a = Filled({1}, {1});
  EXPECT_THROW(ClipGradNorm({&a}, 0), std::invalid_argument);
}

TEST(ClipCoefficient, IsOneWithinTheLimit) {
  EXPECT_EQ(ClipCoefficient(0.5, 1.0), 1.0);
  EXPECT_NEAR(ClipCoefficient(4.0, 1.0), 0.25, 1e-6);
}

}  // namespace
}  // namespace ringlet::nn
