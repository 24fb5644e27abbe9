// Embedding: rows looked up by id, the weight's gradient summed per id,
// bfloat16 under autocast, ids that are not integers in range refused.
#include "nn/ops/embedding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nn/compute_options.h"
#include "nn/ops/autocast.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::ExpectGradientNear;
using ::testing::HasSubstr;
using testing::Project;
using testing::RandomTensor;

TEST(Embedding, LooksUpTheRowOfEachId) {
  const Tensor w = RandomTensor({5, 3}, 1);
  const Tensor ids = Tensor::FromVector({2, 2}, {4, 0, 2, 4});
  const Tensor y = EmbeddingForward(ids, w);
  ASSERT_EQ(y.shape(), (Shape{2, 2, 3}));
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t id = static_cast<int64_t>(ids.data()[i]);
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(y.data()[i * 3 + j], w.data()[id * 3 + j]);
    }
  }
}

TEST(Embedding, TheWeightGradientMatchesFiniteDifferences) {
  Tensor w = RandomTensor({6, 4}, 2);
  const Tensor ids = Tensor::FromVector({5}, {1, 3, 1, 5, 0});
  const Tensor r = RandomTensor({5, 4}, 3);
  const Tensor dw = EmbeddingBackward(ids, r, 6);
  ASSERT_EQ(dw.shape(), w.shape());
  ExpectGradientNear("embedding dw", w, dw,
                     [&] { return Project(EmbeddingForward(ids, w), r); });
  // Row 2 and 4 are never looked up: no gradient.
  for (int64_t j = 0; j < 4; ++j) {
    EXPECT_EQ(dw.data()[2 * 4 + j], 0.0f);
    EXPECT_EQ(dw.data()[4 * 4 + j], 0.0f);
  }
}

TEST(Embedding, AutocastGivesBfloat16Rows) {
  const Tensor w = RandomTensor({4, 8}, 4);
  const Tensor ids = Tensor::FromVector({3}, {3, 1, 3});
  const auto autocast2 =
      ScopedCompute(&ComputeOptions::autocast, DType::kBFloat16);
  const Tensor y = EmbeddingForward(ids, w);
  const auto autocast3 =
      ScopedCompute(&ComputeOptions::autocast, DType::kFloat32);
  ASSERT_EQ(y.dtype(), DType::kBFloat16);
  const Tensor want = AsDType(EmbeddingForward(ids, w), DType::kBFloat16);
  for (int64_t i = 0; i < y.numel(); ++i) {
    EXPECT_EQ(y.bf16_data()[i], want.bf16_data()[i]);
  }
  const Tensor dw = EmbeddingBackward(
      ids, AsDType(RandomTensor({3, 8}, 5), DType::kBFloat16), 4);
  EXPECT_EQ(dw.dtype(), DType::kFloat32);
}

TEST(Embedding, IdsOutOfRangeOrFractionalAreRefused) {
  const Tensor w({4, 2});
  for (float bad : {4.0f, -1.0f, 1.5f}) {
    try {
      EmbeddingForward(Tensor::FromVector({2}, {0.0f, bad}), w);
      ADD_FAILURE() << bad;
    } catch (const ShapeError& e) {
      EXPECT_THAT(e.what(), HasSubstr("at position 1 is not an integer in "
                                      "[0, 4)"));
    }
  }
  EXPECT_THROW(EmbeddingBackward(Tensor({3}), Tensor({3, 2, 1}), 4),
               ShapeError);
}

}  // namespace
}  // namespace ringlet::nn
