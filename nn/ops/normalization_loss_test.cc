// Batch norm and softmax cross-entropy: forward against formulas, backward
// against finite differences, running statistics, bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "nn/compute_options.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/loss.h"
#include "nn/ops/op_threads.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::ExpectGradientNear;
using ::testing::HasSubstr;
using testing::Project;
using testing::RandomTensor;

BatchNormStats FreshStats(int64_t c) {
  BatchNormStats s;
  s.running_mean = Tensor({c});
  s.running_var = Tensor({c});
  s.running_var.Fill(1.0f);
  return s;
}

TEST(BatchNorm2d, TrainingNormalisesPerChannelAndUpdatesRunningStats) {
  const int64_t n = 3, c = 2, h = 2, w = 3, m = n * h * w;
  const Tensor x = RandomTensor({n, c, h, w}, 1, -2, 3);
  const Tensor gamma = Tensor::FromVector({c}, {1.5f, 0.5f});
  const Tensor beta = Tensor::FromVector({c}, {0.1f, -0.2f});
  BatchNormStats stats = FreshStats(c);
  BatchNormCache cache;
  const Tensor y = BatchNorm2dTrainForward(x, gamma, beta, &stats, &cache);
  for (int64_t ch = 0; ch < c; ++ch) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < h * w; ++j)
        mean += x.data()[(i * c + ch) * h * w + j];
    mean /= m;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < h * w; ++j) {
        const double d = x.data()[(i * c + ch) * h * w + j] - mean;
        var += d * d;
      }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < h * w; ++j) {
        const int64_t at = (i * c + ch) * h * w + j;
        const double want = gamma.data()[ch] * (x.data()[at] - mean) /
                                std::sqrt(var / m + 1e-5) +
                            beta.data()[ch];
        EXPECT_NEAR(y.data()[at], want, 1e-5);
      }
    // PyTorch's rule: momentum 0.1, unbiased variance in the running value.
    EXPECT_NEAR(stats.running_mean.data()[ch], 0.1 * mean, 1e-6);
    EXPECT_NEAR(stats.running_var.data()[ch], 0.9 + 0.1 * var / (m - 1), 1e-6);
  }
}

TEST(BatchNorm2d, EvalUsesRunningStats) {
  const Tensor x = RandomTensor({2, 2, 2, 2}, 2);
  BatchNormStats stats = FreshStats(2);
  stats.running_mean = Tensor::FromVector({2}, {0.5f, -1.0f});
  stats.running_var = Tensor::FromVector({2}, {4.0f, 0.25f});
  const Tensor gamma = Tensor::FromVector({2}, {2.0f, 1.0f});
  const Tensor beta = Tensor::FromVector({2}, {0.0f, 1.0f});
  const Tensor y = BatchNorm2dEvalForward(x, gamma, beta, stats);
  for (int64_t i = 0; i < 16; ++i) {
    const int ch = (i / 4) % 2;
    const double want = gamma.data()[ch] *
                            (x.data()[i] - stats.running_mean.data()[ch]) /
                            std::sqrt(stats.running_var.data()[ch] + 1e-5) +
                        beta.data()[ch];
    EXPECT_NEAR(y.data()[i], want, 1e-5);
  }
}

TEST(BatchNorm2d, GradientsMatchFiniteDifferences) {
  for (const Shape& shape : {Shape{2, 3, 3, 3}, Shape{1, 2, 3, 5}}) {
    Tensor x = RandomTensor(shape, 3, -2, 2);
    Tensor gamma = RandomTensor({shape[1]}, 4, 0.5f, 1.5f);
    Tensor beta = RandomTensor({shape[1]}, 5);
    BatchNormStats stats = FreshStats(shape[1]);
    BatchNormCache cache;
    const Tensor y = BatchNorm2dTrainForward(x, gamma, beta, &stats, &cache);
    const Tensor r = RandomTensor(y.shape(), 6);
    const BatchNormGrads g = BatchNorm2dBackward(r, gamma, cache);
    const auto loss = [&] {
      BatchNormStats scratch = FreshStats(shape[1]);
      BatchNormCache unused;
      return Project(BatchNorm2dTrainForward(x, gamma, beta, &scratch, &unused),
                     r);
    };
    ExpectGradientNear("batchnorm dx " + ToString(shape), x, g.dx, loss, 1e-2f,
                       2e-2);
    ExpectGradientNear("batchnorm dgamma", gamma, g.dgamma, loss);
    ExpectGradientNear("batchnorm dbeta", beta, g.dbeta, loss);
  }
}

TEST(BatchNorm2d, OneValuePerChannelCannotTrain) {
  BatchNormStats stats = FreshStats(2);
  BatchNormCache cache;
  try {
    BatchNorm2dTrainForward(Tensor({1, 2, 1, 1}), Tensor({2}), Tensor({2}),
                            &stats, &cache);
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("more than one value per channel"));
  }
  EXPECT_THROW(BatchNorm2dTrainForward(Tensor({2, 3, 2, 2}), Tensor({2}),
                                       Tensor({2}), &stats, &cache),
               ShapeError);
}

TEST(SoftmaxCrossEntropy, LossGradientAndAccuracy) {
  for (Reduction reduction : {Reduction::kMean, Reduction::kSum}) {
    Tensor logits = RandomTensor({5, 4}, 7, -3, 3);
    const std::vector<int32_t> labels = {0, 3, 1, 1, 2};
    const LossResult result =
        SoftmaxCrossEntropy(logits, labels.data(), reduction);
    double want = 0;
    int64_t correct = 0;
    for (int i = 0; i < 5; ++i) {
      double z = 0;
      int best = 0;
      for (int j = 0; j < 4; ++j) {
        z += std::exp(static_cast<double>(logits.data()[i * 4 + j]));
        if (logits.data()[i * 4 + j] > logits.data()[i * 4 + best]) best = j;
      }
      want += std::log(z) - logits.data()[i * 4 + labels[i]];
      correct += best == labels[i];
    }
    if (reduction == Reduction::kMean) want /= 5;
    EXPECT_NEAR(result.loss, want, 1e-5);
    EXPECT_EQ(result.correct, correct);
    ExpectGradientNear("cross entropy dlogits", logits, result.dlogits, [&] {
      return SoftmaxCrossEntropy(logits, labels.data(), reduction).loss;
    });
  }
}

// Started and finished later, the loss is the one-call loss, bit for bit.
TEST(SoftmaxCrossEntropy, StartThenFinishIsTheSameLoss) {
  const Tensor logits = RandomTensor({6, 10}, 31, -3, 3);
  const std::vector<int32_t> labels = {0, 9, 3, 3, 7, 1};
  for (Reduction r : {Reduction::kMean, Reduction::kSum}) {
    const LossResult whole = SoftmaxCrossEntropy(logits, labels.data(), r);
    PendingLoss pending = StartSoftmaxCrossEntropy(logits, labels.data(), r);
    EXPECT_EQ(std::memcmp(pending.dlogits().data(), whole.dlogits.data(),
                          whole.dlogits.numel() * sizeof(float)),
              0);
    const LossResult done = pending.Finish();
    EXPECT_EQ(done.loss, whole.loss);
    EXPECT_EQ(done.correct, whole.correct);
    EXPECT_EQ(pending.Finish().loss, whole.loss);  // Finishing again.
  }
  std::vector<int32_t> bad = labels;
  bad[2] = 10;  // Checked at the start, not when finishing.
  EXPECT_THROW(StartSoftmaxCrossEntropy(logits, bad.data(), Reduction::kSum),
               ShapeError);
}

// Label smoothing: PyTorch's definition, its gradient, and s = 0 the
// plain loss bit for bit.
TEST(SoftmaxCrossEntropy, LabelSmoothing) {
  Tensor logits = RandomTensor({4, 5}, 17, -3, 3);
  const std::vector<int32_t> labels = {0, 4, 2, 2};
  for (Reduction reduction : {Reduction::kMean, Reduction::kSum}) {
    const float s = 0.1f;
    const LossResult r =
        SoftmaxCrossEntropy(logits, labels.data(), reduction, s);
    double want = 0;
    for (int i = 0; i < 4; ++i) {
      double z = 0;
      for (int j = 0; j < 5; ++j)
        z += std::exp(double{logits.data()[i * 5 + j]});
      for (int j = 0; j < 5; ++j) {
        const double target = (j == labels[i] ? 1 - s : 0) + s / 5;
        want -= target * (logits.data()[i * 5 + j] - std::log(z));
      }
    }
    if (reduction == Reduction::kMean) want /= 4;
    EXPECT_NEAR(r.loss, want, 1e-5);
    ExpectGradientNear("smoothed dlogits", logits, r.dlogits, [&] {
      return SoftmaxCrossEntropy(logits, labels.data(), reduction, s).loss;
    });
    const LossResult plain =
        SoftmaxCrossEntropy(logits, labels.data(), reduction);
    EXPECT_EQ(SoftmaxCrossEntropy(logits, labels.data(), reduction, 0).loss,
              plain.loss);
  }
  EXPECT_THROW(SoftmaxCrossEntropy(logits, labels.data(), Reduction::kSum, 1),
               ShapeError);
}

// Mean squared error: each sample's mean over its elements, reduced over
// the batch; its gradient.
TEST(MeanSquaredError, LossAndGradient) {
  Tensor y = RandomTensor({3, 2, 2}, 5);
  const Tensor t = RandomTensor({3, 2, 2}, 6);
  for (Reduction reduction : {Reduction::kMean, Reduction::kSum}) {
    const LossResult r = MeanSquaredError(y, t.data(), reduction);
    double want = 0;
    for (int64_t e = 0; e < 12; ++e) {
      const double d = double{y.data()[e]} - t.data()[e];
      want += d * d / 4;
    }
    if (reduction == Reduction::kMean) want /= 3;
    EXPECT_NEAR(r.loss, want, 1e-6);
    EXPECT_EQ(r.correct, 0);
    ExpectGradientNear("mse grad", y, r.dlogits, [&] {
      return MeanSquaredError(y, t.data(), reduction).loss;
    });
  }
  EXPECT_THROW(MeanSquaredError(y, nullptr, Reduction::kSum), ShapeError);
}

// Binary cross-entropy with logits: stable for any logit, its gradient,
// and the rows whose every logit is on its target's side count as right.
TEST(BinaryCrossEntropyWithLogits, LossGradientAndCounts) {
  Tensor x = RandomTensor({4, 3}, 9, -4, 4);
  const std::vector<float> t = {1, 0, 1, 0, 0, 0, 1, 1, 1, 0.5f, 0, 1};
  for (Reduction reduction : {Reduction::kMean, Reduction::kSum}) {
    const LossResult r = BinaryCrossEntropyWithLogits(x, t.data(), reduction);
    double want = 0;
    int64_t right = 0;
    for (int i = 0; i < 4; ++i) {
      bool all = true;
      for (int j = 0; j < 3; ++j) {
        const double v = x.data()[i * 3 + j], p = 1 / (1 + std::exp(-v));
        const double tt = t[i * 3 + j];
        want -= (tt * std::log(p) + (1 - tt) * std::log(1 - p)) / 3;
        all &= (v > 0) == (tt > 0.5);
      }
      right += all;
    }
    if (reduction == Reduction::kMean) want /= 4;
    EXPECT_NEAR(r.loss, want, 1e-6);
    EXPECT_EQ(r.correct, right);
    ExpectGradientNear("bce grad", x, r.dlogits, [&] {
      return BinaryCrossEntropyWithLogits(x, t.data(), reduction).loss;
    });
  }
  const Tensor huge = Tensor::FromVector({1, 2}, {1000.0f, -1000.0f});
  const float ones[] = {0, 1};
  const LossResult r =
      BinaryCrossEntropyWithLogits(huge, ones, Reduction::kSum);
  EXPECT_NEAR(r.loss, 1000.0, 1e-6);  // Finite: (1000 + 1000) / 2.
  const float bad[] = {0, 2};
  EXPECT_THROW(BinaryCrossEntropyWithLogits(huge, bad, Reduction::kSum),
               ShapeError);
}

TEST(SoftmaxCrossEntropy, HugeLogitsStayFinite) {
  const Tensor logits = Tensor::FromVector({1, 3}, {1000.0f, -1000.0f, 0.0f});
  const int32_t label = 0;
  const LossResult r = SoftmaxCrossEntropy(logits, &label, Reduction::kSum);
  EXPECT_NEAR(r.loss, 0.0, 1e-6);
  EXPECT_TRUE(std::isfinite(r.dlogits.data()[1]));
}

TEST(SoftmaxCrossEntropy, LabelOutOfRange) {
  const std::vector<int32_t> labels = {0, 10};
  try {
    SoftmaxCrossEntropy(Tensor({2, 10}), labels.data(), Reduction::kMean);
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("label 10 of row 1 is outside [0, 10)"));
  }
}

// Large enough for the channels to be split over threads: every channel is
// still summed by one thread in one order, so results are bitwise equal.
TEST(BatchNorm, ThreadsDoNotChangeTheResults) {
  const Tensor x = RandomTensor({4, 8, 64, 64}, 71, -1.0f, 3.0f);
  const Tensor gamma = RandomTensor({8}, 72), beta = RandomTensor({8}, 73);
  const Tensor dy = RandomTensor({4, 8, 64, 64}, 74);
  std::vector<std::vector<float>> results;
  for (int threads : {1, 3}) {
    const auto threads2 = ScopedCompute(&ComputeOptions::op_threads, threads);
    BatchNormStats stats{Tensor({8}), Tensor({8}), 0.1f, 1e-5f};
    BatchNormCache cache;
    const Tensor y = BatchNorm2dTrainForward(x, gamma, beta, &stats, &cache);
    const BatchNormGrads g = BatchNorm2dBackward(dy, gamma, cache);
    std::vector<float> all;
    const std::vector<const Tensor*> outputs = {&y,
                                                &g.dx,
                                                &g.dgamma,
                                                &g.dbeta,
                                                &stats.running_mean,
                                                &stats.running_var};
    for (const Tensor* t : outputs) {
      all.insert(all.end(), t->data(), t->data() + t->numel());
    }
    results.push_back(all);
  }
  const auto threads3 = ScopedCompute(&ComputeOptions::op_threads, 1);
  EXPECT_TRUE(results[0] == results[1]);
}

}  // namespace
}  // namespace ringlet::nn
