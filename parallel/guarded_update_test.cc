#include "parallel/guarded_update.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "nn/optim/optimizer.h"
#include "nn/tensor.h"

namespace ringlet::parallel {
namespace {

const std::vector<std::string> kNames = {"w", "b"};

std::vector<float> Values(const nn::Tensor& t) {
  return std::vector<float>(t.data(), t.data() + t.numel());
}

// Two parameters and their gradients, with an optimizer over them.
struct Params {
  nn::Tensor w = nn::Tensor::FromVector({3}, {1.0f, 2.0f, 3.0f});
  nn::Tensor b = nn::Tensor::FromVector({1}, {0.5f});
  nn::Tensor gw = nn::Tensor::FromVector({3}, {4.0f, -8.0f, 2.0f});
  nn::Tensor gb = nn::Tensor::FromVector({1}, {6.0f});
  std::unique_ptr<nn::Optimizer> optimizer;
  explicit Params(const nn::OptimizerOptions& o)
      : optimizer(nn::MakeOptimizer(o, {&w, &b}, kNames)) {}
  SummedGradients Summed(int64_t samples) {
    SummedGradients g;
    g.grads = {&gw, &gb};
    g.names = &kNames;
    g.samples = samples;
    return g;
  }
};

nn::OptimizerOptions Sgd(float lr, float momentum = 0) {
  nn::OptimizerOptions o;
  o.lr = lr;
  o.momentum = momentum;
  return o;
}

QueuedReplicaStep CpuStep() {
  QueuedReplicaStep step;
  step.device = nn::Device::Cpu(0);
  return step;
}

TEST(GuardedUpdate, MeansTakeTheOptimizersStep) {
  Params p(Sgd(0.25f));
  QueuedReplicaStep step = CpuStep();
  EXPECT_TRUE(QueueGuardedUpdate(p.Summed(1), 0, *p.optimizer, &step));
  EXPECT_EQ(Values(p.w), (std::vector<float>{0.0f, 4.0f, 2.5f}));
  EXPECT_EQ(Values(p.b), (std::vector<float>{-1.0f}));
  EXPECT_EQ(step.gradients.FirstBad(), -1);
  EXPECT_EQ(step.gradient_names, &kNames);
  EXPECT_EQ(step.divergence, "");
}

TEST(GuardedUpdate, SumsTakeTheStepOfTheirMean) {
  // Plain SGD folds 1/4 into its rate; with momentum the sums are divided
  // first. Both must be the step of the mean gradient.
  for (const float momentum : {0.0f, 0.9f}) {
    Params sums(Sgd(0.5f, momentum)), means(Sgd(0.5f, momentum));
    for (nn::Tensor* g : {&means.gw, &means.gb}) {
      for (int64_t i = 0; i < g->numel(); ++i) g->data()[i] /= 4;
    }
    QueuedReplicaStep a = CpuStep(), b = CpuStep();
    QueueGuardedUpdate(sums.Summed(4), 0, *sums.optimizer, &a);
    QueueGuardedUpdate(means.Summed(1), 0, *means.optimizer, &b);
    EXPECT_EQ(Values(sums.w), Values(means.w)) << "momentum " << momentum;
    EXPECT_EQ(Values(sums.b), Values(means.b)) << "momentum " << momentum;
    EXPECT_EQ(Values(sums.w), (std::vector<float>{0.5f, 3.0f, 2.75f}));
  }
}

TEST(GuardedUpdate, ClippingBoundsTheMeanGradientsNorm) {
  // The mean gradient (sums / 2) has norm sqrt(4 + 16 + 1 + 9) = 5.477;
  // clipped to 1, the step of lr 1 moves the parameters by a norm of 1.
  for (const int64_t samples : {1, 2}) {
    Params p(Sgd(1.0f));
    if (samples == 1) {
      for (nn::Tensor* g : {&p.gw, &p.gb}) {
        for (int64_t i = 0; i < g->numel(); ++i) g->data()[i] /= 2;
      }
    }
    const std::vector<float> w0 = Values(p.w), b0 = Values(p.b);
    QueuedReplicaStep step = CpuStep();
    EXPECT_TRUE(
        QueueGuardedUpdate(p.Summed(samples), 1.0, *p.optimizer, &step));
    double moved = 0;
    for (int i = 0; i < 3; ++i) moved += std::pow(p.w.data()[i] - w0[i], 2);
    moved += std::pow(p.b.data()[0] - b0[0], 2);
    EXPECT_NEAR(std::sqrt(moved), 1.0, 1e-5) << samples << " samples";
    // The direction is the gradient's: w[1] moves up, twice w[0]'s move.
    EXPECT_NEAR(p.w.data()[1] - w0[1], -2 * (p.w.data()[0] - w0[0]), 1e-6);
  }
}

TEST(GuardedUpdate, ANonFiniteGradientSkipsTheStepAndIsNamed) {
  for (const double clip : {0.0, 1.0}) {
    Params p(Sgd(0.1f, 0.9f));
    p.gb.data()[0] = std::numeric_limits<float>::infinity();
    const std::vector<float> w0 = Values(p.w);
    QueuedReplicaStep step = CpuStep();
    // Clipping needs the norm, so the host stops there; without it the
    // optimizer is called and skips by the counts.
    EXPECT_EQ(QueueGuardedUpdate(p.Summed(2), clip, *p.optimizer, &step),
              clip == 0);
    EXPECT_EQ(step.gradients.FirstBad(), 1);
    EXPECT_EQ(step.divergence, "the gradient of b became inf");
    EXPECT_EQ(Values(p.w), w0) << "clip " << clip;
    EXPECT_EQ(Values(p.b), (std::vector<float>{0.5f}));
    for (const auto& [name, state] : p.optimizer->State()) {
      EXPECT_EQ(Values(*state), std::vector<float>(state->numel(), 0.0f))
          << name;
    }
  }
}

TEST(GuardedUpdate, NamesAndSamplesAreChecked) {
  Params p(Sgd(0.1f));
  QueuedReplicaStep step = CpuStep();
  SummedGradients g = p.Summed(1);
  g.names = nullptr;
  EXPECT_THROW(QueueGuardedUpdate(g, 0, *p.optimizer, &step),
               std::invalid_argument);
  g = p.Summed(0);
  EXPECT_THROW(QueueGuardedUpdate(g, 0, *p.optimizer, &step),
               std::invalid_argument);
  const std::vector<std::string> one = {"w"};
  g = p.Summed(1);
  g.names = &one;
  EXPECT_THROW(QueueGuardedUpdate(g, 0, *p.optimizer, &step),
               std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::parallel
