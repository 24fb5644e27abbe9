// Layer norm against its formula, its three gradients against finite
// differences, bfloat16 against float32, bad shapes refused.
#include "nn/ops/layer_norm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "nn/ops/autocast.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::ExpectGradientNear;
using ::testing::HasSubstr;
using testing::Project;
using testing::RandomTensor;

TEST(LayerNorm, EachRowNormalisedThenScaledAndShifted) {
  const int64_t rows = 6, d = 5;
  const Tensor x = RandomTensor({2, 3, d}, 1, -2, 3);
  const Tensor gamma = RandomTensor({d}, 2, 0.5, 1.5);
  const Tensor beta = RandomTensor({d}, 3);
  LayerNormCache cache;
  const Tensor y = LayerNormForward(x, gamma, beta, 1e-5f, &cache);
  ASSERT_EQ(y.shape(), x.shape());
  ASSERT_TRUE(cache.filled());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) mean += x.data()[r * d + j];
    mean /= d;
    for (int64_t j = 0; j < d; ++j) {
      var += std::pow(x.data()[r * d + j] - mean, 2);
    }
    var /= d;
    EXPECT_NEAR(cache.mean.data()[r], mean, 1e-6);
    for (int64_t j = 0; j < d; ++j) {
      const double want = (x.data()[r * d + j] - mean) / std::sqrt(var + 1e-5) *
                              gamma.data()[j] +
                          beta.data()[j];
      EXPECT_NEAR(y.data()[r * d + j], want, 1e-5);
    }
  }
}

TEST(LayerNorm, GradientsMatchFiniteDifferences) {
  Tensor x = RandomTensor({4, 7}, 4, -2, 2);
  Tensor gamma = RandomTensor({7}, 5, 0.5, 1.5);
  Tensor beta = RandomTensor({7}, 6);
  const Tensor r = RandomTensor({4, 7}, 7);
  LayerNormCache cache;
  LayerNormForward(x, gamma, beta, 1e-5f, &cache);
  const LayerNormGrads g = LayerNormBackward(r, gamma, cache);
  const auto loss = [&] {
    return Project(LayerNormForward(x, gamma, beta, 1e-5f, nullptr), r);
  };
  ExpectGradientNear("layer_norm dx", x, g.dx, loss, 1e-2f, 2e-2);
  ExpectGradientNear("layer_norm dgamma", gamma, g.dgamma, loss);
  ExpectGradientNear("layer_norm dbeta", beta, g.dbeta, loss);
}

TEST(LayerNorm, Bfloat16InputsGiveBfloat16OutputsCloseToFloat32) {
  const Tensor x32 = RandomTensor({8, 16}, 8, -3, 3);
  const Tensor x = AsDType(x32, DType::kBFloat16);
  const Tensor gamma = RandomTensor({16}, 9, 0.5, 1.5);
  const Tensor beta = RandomTensor({16}, 10);
  LayerNormCache cache;
  const Tensor y = LayerNormForward(x, gamma, beta, 1e-5f, &cache);
  ASSERT_EQ(y.dtype(), DType::kBFloat16);
  // The float32 op on the same (rounded) inputs, rounded once.
  const Tensor want = AsDType(LayerNormForward(AsDType(x, DType::kFloat32),
                                               gamma, beta, 1e-5f, nullptr),
                              DType::kBFloat16);
  for (int64_t i = 0; i < y.numel(); ++i) {
    EXPECT_EQ(y.bf16_data()[i], want.bf16_data()[i]) << i;
  }
  const Tensor dy = AsDType(RandomTensor({8, 16}, 11), DType::kBFloat16);
  const LayerNormGrads g = LayerNormBackward(dy, gamma, cache);
  EXPECT_EQ(g.dx.dtype(), DType::kBFloat16);
  EXPECT_EQ(g.dgamma.dtype(), DType::kFloat32);
}

TEST(LayerNorm, BadShapesAndAnEmptyCacheAreRefused) {
  try {
    LayerNormForward(Tensor({2, 4}), Tensor({5}), Tensor({5}), 1e-5f, nullptr);
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not end in the normalised size 5"));
  }
  EXPECT_THROW(LayerNormForward(Tensor({2, 4}), Tensor({4}), Tensor({3}), 1e-5f,
                                nullptr),
               ShapeError);
  EXPECT_THROW(LayerNormBackward(Tensor({2, 4}), Tensor({4}), LayerNormCache()),
               std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::nn
