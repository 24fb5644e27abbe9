// Dropout: the share kept, the scaling, the mask a function of (seed,
// element) alone (so the backward and any thread count agree), bad
// probabilities refused.
#include "nn/ops/dropout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nn/compute_options.h"
#include "nn/ops/autocast.h"
#include "nn/ops/op_threads.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using ::testing::HasSubstr;
using testing::RandomTensor;

TEST(Dropout, KeepsAboutOneMinusPScaledAndZeroesTheRest) {
  const int64_t n = 100000;
  Tensor x({n});
  x.Fill(2.0f);
  const Tensor y = DropoutForward(x, 0.3f, 7);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = y.data()[i];
    ASSERT_TRUE(v == 0.0f || v == 2.0f / 0.7f) << v;
    kept += v != 0.0f;
  }
  // 70,000 expected; the binomial's standard deviation is 145.
  EXPECT_NEAR(static_cast<double>(kept), 70000.0, 1000.0);
}

TEST(Dropout, TheMaskDependsOnSeedAndElementOnly) {
  const Tensor x = RandomTensor({4096}, 1);
  const Tensor a = DropoutForward(x, 0.5f, 11);
  const Tensor b = DropoutForward(x, 0.5f, 11);
  const Tensor c = DropoutForward(x, 0.5f, 12);
  int64_t differ = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(a.data()[i], b.data()[i]);
    EXPECT_EQ(a.data()[i] != 0.0f, DropoutKeeps(11, i, DropoutThreshold(0.5f)));
    differ += (a.data()[i] != 0.0f) != (c.data()[i] != 0.0f);
  }
  EXPECT_GT(differ, 1000);  // About half the 4096 under another seed.
  // Threads split the elements; the mask stays.
  const auto threads = ScopedCompute(&ComputeOptions::op_threads, 2);
  const Tensor threaded = DropoutForward(x, 0.5f, 11);
  const auto threads2 = ScopedCompute(&ComputeOptions::op_threads, 1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(threaded.data()[i], a.data()[i]);
  }
}

TEST(Dropout, BackwardPassesTheGradientWhereTheForwardKept) {
  const Tensor x = RandomTensor({512}, 2);
  const Tensor dy = RandomTensor({512}, 3);
  const Tensor y = DropoutForward(x, 0.25f, 5);
  const Tensor dx = DropoutBackward(dy, 0.25f, 5);
  for (int64_t i = 0; i < 512; ++i) {
    if (y.data()[i] == 0.0f && x.data()[i] != 0.0f) {
      EXPECT_EQ(dx.data()[i], 0.0f);
    } else {
      EXPECT_FLOAT_EQ(dx.data()[i], dy.data()[i] / 0.75f);
    }
  }
}

TEST(Dropout, Bfloat16IsTheFloat32ValueRoundedOnce) {
  const Tensor x = AsDType(RandomTensor({256}, 4), DType::kBFloat16);
  const Tensor y = DropoutForward(x, 0.4f, 9);
  ASSERT_EQ(y.dtype(), DType::kBFloat16);
  const Tensor want = AsDType(
      DropoutForward(AsDType(x, DType::kFloat32), 0.4f, 9), DType::kBFloat16);
  for (int64_t i = 0; i < 256; ++i) {
    EXPECT_EQ(y.bf16_data()[i], want.bf16_data()[i]);
  }
}

TEST(Dropout, PZeroIsTheIdentityAndBadProbabilitiesAreRefused) {
  const Tensor x = RandomTensor({8}, 6);
  EXPECT_EQ(DropoutForward(x, 0.0f, 1).data(), x.data());
  for (float p : {1.0f, -0.1f, 1.5f}) {
    try {
      DropoutForward(x, p, 1);
      ADD_FAILURE() << p;
    } catch (const ShapeError& e) {
      EXPECT_THAT(e.what(), HasSubstr("is outside [0, 1)"));
    }
  }
}

}  // namespace
}  // namespace ringlet::nn
