// Batch norm's fused epilogue (BatchNormEpilogue) against the separate ops
// it replaces, bit for bit: Add, then ReluForward after the normalisation;
// ReluBackward before the batch-norm backward, whose result is also the
// residual's gradient. In float32 and bfloat16, training and evaluation,
// alone and synchronised.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "nn/compute_options.h"
#include "nn/ops/activation.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/op_threads.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::RandomTensor;

BatchNormStats FreshStats(int64_t c) {
  BatchNormStats s;
  s.running_mean = Tensor({c});
  s.running_var = Tensor({c});
  s.running_var.Fill(1.0f);
  return s;
}

void ExpectSameBits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_TRUE(a.defined()) << what;
  ASSERT_TRUE(b.defined()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << what;
}

struct Case {
  DType dtype;
  bool residual;
  bool relu;
  bool synchronised;
};

std::string Name(const Case& c) {
  return std::string(ToString(c.dtype)) + (c.residual ? "_residual" : "") +
         (c.relu ? "_relu" : "") + (c.synchronised ? "_synchronised" : "");
}

class BatchNormEpilogueTest : public ::testing::TestWithParam<Case> {};

TEST_P(BatchNormEpilogueTest, TrainingMatchesTheSeparateOpsBitForBit) {
  const Case& p = GetParam();
  // 2 x 5 x 17 x 19 values: rows of odd length (the vector loops' tails),
  // about half of them below zero after the add (the ReLU's mask).
  const int64_t n = 2, c = 5, h = 17, w = 19;
  const Tensor x = RandomTensor({n, c, h, w}, 1, -2, 3).To(p.dtype);
  const Tensor residual = RandomTensor({n, c, h, w}, 2, -1, 1).To(p.dtype);
  const Tensor dy = RandomTensor({n, c, h, w}, 3, -1, 1).To(p.dtype);
  const Tensor gamma = RandomTensor({c}, 4, 0.5, 1.5);
  const Tensor beta = RandomTensor({c}, 5, -0.5, 0.5);
  // Two replicas holding the same batch: the sums double, the statistics
  // stay, and the synchronised code path runs.
  const ReplicaSum doubled = p.synchronised
                                 ? ReplicaSum([](double* v, int64_t count) {
                                     for (int64_t i = 0; i < count; ++i)
                                       v[i] *= 2;
                                   })
                                 : ReplicaSum();

  BatchNormEpilogue epilogue;
  if (p.residual) epilogue.residual = residual;
  epilogue.relu = p.relu;
  BatchNormStats fused_stats = FreshStats(c);
  BatchNormCache fused_cache;
  const Tensor fused = BatchNorm2dTrainForward(x, gamma, beta, &fused_stats,
                                               &fused_cache, doubled, epilogue);
  const BatchNormGrads fused_grads =
      BatchNorm2dBackward(dy, gamma, fused_cache, doubled);

  BatchNormStats stats = FreshStats(c);
  BatchNormCache cache;
  Tensor y = BatchNorm2dTrainForward(x, gamma, beta, &stats, &cache, doubled);
  if (p.residual) y = Add(y, residual);
  if (p.relu) y = ReluForward(y);
  const Tensor g = p.relu ? ReluBackward(y, dy) : dy;
  const BatchNormGrads grads = BatchNorm2dBackward(g, gamma, cache, doubled);

  ExpectSameBits(fused, y, "output");
  ExpectSameBits(fused_stats.running_mean, stats.running_mean, "running mean");
  ExpectSameBits(fused_stats.running_var, stats.running_var, "running var");
  ExpectSameBits(fused_grads.dx, grads.dx, "dx");
  ExpectSameBits(fused_grads.dgamma, grads.dgamma, "dgamma");
  ExpectSameBits(fused_grads.dbeta, grads.dbeta, "dbeta");
  if (p.residual) {
    ExpectSameBits(fused_grads.d_residual, g, "residual gradient");
  } else {
    EXPECT_FALSE(fused_grads.d_residual.defined());
  }
  if (p.relu) {
    // The mask did something: some outputs were zeroed, some passed.
    int64_t zeros = 0;
    const Tensor f = fused.To(DType::kFloat32);
    for (int64_t i = 0; i < f.numel(); ++i) zeros += f.data()[i] == 0.0f;
    EXPECT_GT(zeros, f.numel() / 10);
    EXPECT_LT(zeros, f.numel() * 9 / 10);
  }
}

TEST_P(BatchNormEpilogueTest, EvaluationMatchesTheSeparateOpsBitForBit) {
  const Case& p = GetParam();
  if (p.synchronised) GTEST_SKIP() << "evaluation has no statistics to sync";
  const int64_t c = 3;
  const Tensor x = RandomTensor({2, c, 7, 9}, 6, -2, 3).To(p.dtype);
  const Tensor residual = RandomTensor({2, c, 7, 9}, 7, -1, 1).To(p.dtype);
  const Tensor gamma = RandomTensor({c}, 8, 0.5, 1.5);
  const Tensor beta = RandomTensor({c}, 9, -0.5, 0.5);
  BatchNormStats stats = FreshStats(c);
  stats.running_mean = RandomTensor({c}, 10, -0.5, 0.5);
  BatchNormEpilogue epilogue;
  if (p.residual) epilogue.residual = residual;
  epilogue.relu = p.relu;
  Tensor y = BatchNorm2dEvalForward(x, gamma, beta, stats);
  if (p.residual) y = Add(y, residual);
  if (p.relu) y = ReluForward(y);
  ExpectSameBits(BatchNorm2dEvalForward(x, gamma, beta, stats, epilogue), y,
                 "output");
}

INSTANTIATE_TEST_SUITE_P(
    EveryEpilogue, BatchNormEpilogueTest,
    ::testing::Values(Case{DType::kFloat32, false, true, false},
                      Case{DType::kFloat32, true, false, false},
                      Case{DType::kFloat32, true, true, false},
                      Case{DType::kFloat32, true, true, true},
                      Case{DType::kBFloat16, false, true, false},
                      Case{DType::kBFloat16, true, false, false},
                      Case{DType::kBFloat16, true, true, false},
                      Case{DType::kBFloat16, true, true, true}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return Name(info.param);
    });

// Rows are split over the op threads in memory order and summed per
// channel in image order: one thread and two give the same bits, on a
// tensor large enough to be split (36 runs of 113 rows, 16 runs a thread
// at least) whose rows (6x6) are shorter than a run.
TEST(BatchNormEpilogue, ResultsDoNotDependOnTheThreadCount) {
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    const int64_t c = 16;
    const Shape shape = {256, c, 6, 6};
    const Tensor x = RandomTensor(shape, 16, -2, 3).To(dtype);
    const Tensor residual = RandomTensor(shape, 17, -1, 1).To(dtype);
    const Tensor dy = RandomTensor(shape, 18, -1, 1).To(dtype);
    const Tensor gamma = RandomTensor({c}, 19, 0.5, 1.5);
    const Tensor beta = RandomTensor({c}, 20, -0.5, 0.5);
    BatchNormEpilogue epilogue;
    epilogue.residual = residual;
    epilogue.relu = true;
    Tensor y[2];
    BatchNormGrads g[2];
    for (int threads : {1, 2}) {
      const auto threads2 = ScopedCompute(&ComputeOptions::op_threads, threads);
      BatchNormStats stats = FreshStats(c);
      BatchNormCache cache;
      y[threads - 1] = BatchNorm2dTrainForward(x, gamma, beta, &stats, &cache,
                                               nullptr, epilogue);
      g[threads - 1] = BatchNorm2dBackward(dy, gamma, cache);
    }
    const auto threads3 = ScopedCompute(&ComputeOptions::op_threads, 1);
    const std::string type = ToString(dtype);
    ExpectSameBits(y[0], y[1], type + " output");
    ExpectSameBits(g[0].dx, g[1].dx, type + " dx");
    ExpectSameBits(g[0].dgamma, g[1].dgamma, type + " dgamma");
    ExpectSameBits(g[0].d_residual, g[1].d_residual, type + " d_residual");
  }
}

// A residual of another type than the input takes Add's rules (a bfloat16
// and a float32 operand give float32), through the separate ops.
TEST(BatchNormEpilogue, AResidualOfAnotherTypeFollowsAddsRules) {
  const int64_t c = 2;
  const Tensor x = RandomTensor({2, c, 3, 5}, 11, -2, 3).To(DType::kBFloat16);
  const Tensor residual = RandomTensor({2, c, 3, 5}, 12, -1, 1);
  const Tensor dy = RandomTensor({2, c, 3, 5}, 13, -1, 1);
  const Tensor gamma = RandomTensor({c}, 14, 0.5, 1.5);
  const Tensor beta = RandomTensor({c}, 15, -0.5, 0.5);
  BatchNormEpilogue epilogue;
  epilogue.residual = residual;
  epilogue.relu = true;
  BatchNormStats fused_stats = FreshStats(c), stats = FreshStats(c);
  BatchNormCache fused_cache, cache;
  const Tensor fused = BatchNorm2dTrainForward(x, gamma, beta, &fused_stats,
                                               &fused_cache, nullptr, epilogue);
  const Tensor y = ReluForward(
      Add(BatchNorm2dTrainForward(x, gamma, beta, &stats, &cache), residual));
  EXPECT_EQ(fused.dtype(), DType::kFloat32);
  ExpectSameBits(fused, y, "output");
  const BatchNormGrads fused_grads =
      BatchNorm2dBackward(dy, gamma, fused_cache);
  const Tensor g = ReluBackward(y, dy);
  ExpectSameBits(fused_grads.d_residual, g, "residual gradient");
  ExpectSameBits(fused_grads.dx, BatchNorm2dBackward(g, gamma, cache).dx, "dx");
}

TEST(BatchNormEpilogue, RefusesAResidualOfAnotherShape) {
  BatchNormStats stats = FreshStats(2);
  BatchNormCache cache;
  BatchNormEpilogue epilogue;
  epilogue.residual = Tensor({2, 2, 3, 4});
  Tensor gamma({2}), beta({2});
  try {
    BatchNorm2dTrainForward(Tensor({2, 2, 3, 3}), gamma, beta, &stats, &cache,
                            nullptr, epilogue);
    FAIL() << "a residual of another shape was taken";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("residual"), std::string::npos)
        << e.what();
  }
}

TEST(BatchNormEpilogue, BackwardWithoutAForwardSaysWhatToDo) {
  Tensor gamma({2});
  try {
    BatchNorm2dBackward(Tensor({2, 2, 3, 3}), gamma, BatchNormCache());
    FAIL() << "an empty cache was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("training-mode forward"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ringlet::nn
