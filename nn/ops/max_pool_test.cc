// Max pooling against hand-worked planes (padding that never wins,
// overlapping windows whose gradients add), finite differences, NaNs, the
// refusals, and bfloat16 as float32's values.
#include "nn/ops/max_pool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "nn/ops/autocast.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::ExpectGradientNear;
using testing::Project;
using testing::RandomTensor;

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data(), t.data() + t.numel());
}

// A 1x1x4x4 plane of -1, -2, ..., -16 (row-major).
Tensor Descending() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = -1.0f - i;
  return Tensor::FromVector({1, 1, 4, 4}, v);
}

TEST(MaxPool2d, TwoByTwoAndPaddedThreeByThreeWindows) {
  const Tensor x = Descending();
  EXPECT_EQ(Values(MaxPool2dForward(x, {2, 2, 0})),
            (std::vector<float>{-1, -3, -9, -11}));
  // ResNet's stem pooling (3, stride 2, padding 1): padded values would be
  // 0 had the padding been zeros; it never wins.
  const Tensor y = MaxPool2dForward(x, {3, 2, 1});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(Values(y), (std::vector<float>{-1, -2, -5, -6}));
  EXPECT_EQ(MaxPool2dOutputShape({2, 3, 28, 28}, {3, 2, 1}),
            (Shape{2, 3, 14, 14}));
  EXPECT_EQ(MaxPool2dOutputShape({2, 3, 7, 9}, {2, 2, 0}), (Shape{2, 3, 3, 4}));
}

TEST(MaxPool2d, OverlappingWindowsAddTheirGradientsAtTheMaximum) {
  // 3x3 windows at stride 1 with padding 1 over a 3x3 plane: all nine hold
  // the centre, the largest value, so it takes every window's gradient.
  std::vector<float> v(9, 0.0f);
  v[4] = 5.0f;
  const Tensor x = Tensor::FromVector({1, 1, 3, 3}, v);
  const Tensor y = MaxPool2dForward(x, {3, 1, 1});
  EXPECT_EQ(Values(y), std::vector<float>(9, 5.0f));
  std::vector<float> g(9);
  for (int i = 0; i < 9; ++i) g[i] = 1.0f + i;
  const Tensor dx =
      MaxPool2dBackward(x, y, Tensor::FromVector({1, 1, 3, 3}, g), {3, 1, 1});
  std::vector<float> want(9, 0.0f);
  want[4] = 45.0f;
  EXPECT_EQ(Values(dx), want);
}

TEST(MaxPool2d, TiedMaximaGiveTheGradientToTheFirst) {
  const Tensor x = Tensor::FromVector({1, 1, 2, 2}, {1, 3, 3, 2});
  const Tensor y = MaxPool2dForward(x, {2, 2, 0});
  const Tensor dx =
      MaxPool2dBackward(x, y, Tensor::FromVector({1, 1, 1, 1}, {7}), {2, 2, 0});
  EXPECT_EQ(Values(dx), (std::vector<float>{0, 7, 0, 0}));
}

TEST(MaxPool2d, BackwardMatchesFiniteDifferences) {
  for (const MaxPool2dParams params :
       {MaxPool2dParams{2, 2, 0}, MaxPool2dParams{3, 2, 1},
        MaxPool2dParams{3, 1, 0}, MaxPool2dParams{2, 3, 1}}) {
    Tensor x = RandomTensor({2, 3, 7, 6}, 1 + params.kernel, -2, 2);
    const Tensor y = MaxPool2dForward(x, params);
    const Tensor r = RandomTensor(y.shape(), 2);
    const Tensor dx = MaxPool2dBackward(x, y, r, params);
    // A step far below the gaps between random values, so no window's
    // maximum changes hands.
    ExpectGradientNear(
        "maxpool2d k" + std::to_string(params.kernel) + " s" +
            std::to_string(params.stride) + " p" +
            std::to_string(params.padding),
        x, dx, [&] { return Project(MaxPool2dForward(x, params), r); }, 1e-4f);
  }
}

TEST(MaxPool2d, ANanIsTheMaximumOfItsWindow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::FromVector({1, 1, 2, 4}, {1, nan, 3, 4, 5, 6, 7, 8});
  const std::vector<float> y = Values(MaxPool2dForward(x, {2, 2, 0}));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 8.0f);
}

TEST(MaxPool2d, RefusesWhatPyTorchRefuses) {
  const Tensor x = RandomTensor({1, 1, 4, 4}, 3);
  EXPECT_THROW(MaxPool2dForward(x, {3, 2, 2}), ShapeError);  // pad > k / 2
  EXPECT_THROW(MaxPool2dForward(x, {3, 0, 1}), ShapeError);
  EXPECT_THROW(MaxPool2dForward(x, {5, 1, 0}), ShapeError);  // no window
  EXPECT_THROW(MaxPool2dForward(RandomTensor({4, 4}, 4), {2, 2, 0}),
               ShapeError);
  const Tensor y = MaxPool2dForward(x, {2, 2, 0});
  EXPECT_THROW(MaxPool2dBackward(x, y, Tensor({1, 1, 3, 3}), {2, 2, 0}),
               ShapeError);
  try {
    MaxPool2dForward(x, {3, 2, 2});
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("must be in [0, 1]"),
              std::string::npos)
        << e.what();
  }
}

TEST(MaxPool2d, Bfloat16GivesTheFloat32Values) {
  const Tensor x = AsDType(RandomTensor({2, 2, 6, 6}, 5), DType::kBFloat16);
  const Tensor y = MaxPool2dForward(x, {3, 2, 1});
  ASSERT_EQ(y.dtype(), DType::kBFloat16);
  const Tensor want = MaxPool2dForward(AsDType(x, DType::kFloat32), {3, 2, 1});
  EXPECT_EQ(Values(AsDType(y, DType::kFloat32)), Values(want));
  const Tensor dy = AsDType(RandomTensor(y.shape(), 6), DType::kBFloat16);
  const Tensor dx = MaxPool2dBackward(x, y, dy, {3, 2, 1});
  EXPECT_EQ(dx.dtype(), DType::kBFloat16);
  EXPECT_EQ(dx.shape(), x.shape());
}

}  // namespace
}  // namespace ringlet::nn
