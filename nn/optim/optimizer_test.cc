#include "nn/optim/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/ops/non_finite.h"
#include "nn/optim/adam_optimizer.h"
#include "nn/optim/lion_optimizer.h"
#include "nn/optim/registry.h"
#include "nn/optim/sgd.h"
#include "nn/optim/sgd_optimizer.h"

namespace ringlet::nn {
namespace {

// torch.optim.Adam / AdamW's update as its documentation writes it (the
// algorithm box of torch.optim.AdamW), in double: the oracle.
struct ReferenceAdam {
  bool decoupled;
  double lr, b1, b2, eps, wd;
  std::vector<double> p, m, v;
  int t = 0;
  void Step(const std::vector<double>& grad) {
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (decoupled) {
        p[i] -= lr * wd * p[i];  // theta_t <- theta_{t-1} - gamma lambda theta
      } else {
        g += wd * p[i];  // g_t <- g_t + lambda theta_{t-1}
      }
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double m_hat = m[i] / (1 - std::pow(b1, t));
      const double v_hat = v[i] / (1 - std::pow(b2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

// Gradients that change with the step and the element, signs mixed.
std::vector<double> GradAt(int step, size_t n) {
  std::vector<double> g(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = std::sin(1.3 * step + 0.7 * i) * (i % 3 == 0 ? 10.0 : 0.01);
  }
  return g;
}

void CheckAgainstReference(const std::string& name, float wd) {
  const size_t n = 7;
  OptimizerOptions o;
  o.name = name;
  o.lr = 0.01f;
  o.weight_decay = wd;
  o.beta1 = 0.8f;
  o.beta2 = 0.95f;
  o.eps = 1e-6f;
  std::vector<float> start(n);
  for (size_t i = 0; i < n; ++i) start[i] = 0.5f - 0.2f * i;
  Tensor value = Tensor::FromVector({static_cast<int64_t>(n)}, start);
  auto opt = MakeOptimizer(o, {&value}, {"w"});
  ReferenceAdam ref{name == "adamw",
                    o.lr,
                    o.beta1,
                    o.beta2,
                    o.eps,
                    wd,
                    std::vector<double>(start.begin(), start.end()),
                    std::vector<double>(n),
                    std::vector<double>(n)};
  for (int step = 1; step <= 20; ++step) {
    const std::vector<double> g = GradAt(step, n);
    const Tensor grad = Tensor::FromVector(
        {static_cast<int64_t>(n)}, std::vector<float>(g.begin(), g.end()));
    opt->Step({&grad});
    ref.Step(std::vector<double>(grad.data(), grad.data() + n));
    for (size_t i = 0; i < n; ++i) {
      // float arithmetic against double: a few ulps of a step of ~lr.
      ASSERT_NEAR(value.data()[i], ref.p[i], 2e-6 + 1e-6 * std::abs(ref.p[i]))
          << name << " wd " << wd << " step " << step << " element " << i;
    }
  }
  // The state a checkpoint saves: both moments, then t.
  const auto state = opt->State();
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state[0].first, "w.exp_avg");
  EXPECT_EQ(state[1].first, "w.exp_avg_sq");
  EXPECT_EQ(state[2].first, name + ".step");
  EXPECT_EQ(state[2].second->data()[0], 20.0f);
  EXPECT_NEAR(state[0].second->data()[1], ref.m[1], 1e-6);
}

TEST(Optimizer, AdamWStepsAsTorchDocumentsThem) {
  CheckAgainstReference("adamw", 0.0f);
  CheckAgainstReference("adamw", 0.1f);
}

TEST(Optimizer, AdamStepsAsTorchDocumentsThem) {
  CheckAgainstReference("adam", 0.0f);
  CheckAgainstReference("adam", 0.1f);
}

// AdamW's decay is decoupled: with a zero gradient the parameter still
// shrinks by lr * wd, where Adam's moves by a whole normalised step.
TEST(Optimizer, AdamWDecaysTheWeightItselfAdamTheGradient) {
  for (const char* name : {"adam", "adamw"}) {
    OptimizerOptions o;
    o.name = name;
    o.lr = 0.1f;
    o.weight_decay = 0.5f;
    Tensor value = Tensor::FromVector({1}, {2.0f});
    const Tensor zero = Tensor::FromVector({1}, {0.0f});
    MakeOptimizer(o, {&value}, {"w"})->Step({&zero});
    if (std::string(name) == "adamw") {
      EXPECT_FLOAT_EQ(value.data()[0], 2.0f * (1 - 0.05f));
    } else {
      // g = wd p = 1; m_hat = 1, v_hat = 1: p -= lr * 1 / (1 + eps).
      EXPECT_NEAR(value.data()[0], 1.9f, 1e-6);
    }
  }
}

// Restoring the state (as a checkpoint does) continues the same run.
TEST(Optimizer, RestoredStateContinuesBitForBit) {
  OptimizerOptions o;
  o.name = "adamw";
  o.lr = 0.05f;
  o.weight_decay = 0.01f;
  Tensor a = Tensor::FromVector({3}, {1, 2, 3});
  auto first = MakeOptimizer(o, {&a}, {"w"});
  for (int step = 1; step <= 3; ++step) {
    const std::vector<double> g = GradAt(step, 3);
    const Tensor grad =
        Tensor::FromVector({3}, std::vector<float>(g.begin(), g.end()));
    first->Step({&grad});
  }
  Tensor b = a.Clone();
  auto second = MakeOptimizer(o, {&b}, {"w"});
  const auto from = first->State();
  const auto to = second->State();
  ASSERT_EQ(from.size(), to.size());
  for (size_t i = 0; i < from.size(); ++i) {
    for (int64_t j = 0; j < from[i].second->numel(); ++j) {
      to[i].second->data()[j] = from[i].second->data()[j];
    }
  }
  const std::vector<double> g = GradAt(4, 3);
  const Tensor grad =
      Tensor::FromVector({3}, std::vector<float>(g.begin(), g.end()));
  first->Step({&grad});
  second->Step({&grad});
  for (int j = 0; j < 3; ++j) EXPECT_EQ(a.data()[j], b.data()[j]);
}

// The interface's SGD is the Sgd class's update, momentum state named as
// checkpoints have always named it.
TEST(Optimizer, SgdIsTheSgdUpdate) {
  OptimizerOptions o;
  o.lr = 0.1f;
  o.momentum = 0.9f;
  o.weight_decay = 0.01f;
  Tensor a = Tensor::FromVector({2}, {1.0f, -2.0f});
  Parameter p{"w", Tensor::FromVector({2}, {1.0f, -2.0f}),
              Tensor::FromVector({2}, {0.5f, -0.25f})};
  auto opt = MakeOptimizer(o, {&a}, {"w"});
  Sgd sgd({&p}, {o.lr, o.momentum, o.weight_decay});
  for (int step = 0; step < 3; ++step) {
    opt->Step({&p.grad});
    sgd.Step();
  }
  EXPECT_EQ(a.data()[0], p.value.data()[0]);
  EXPECT_EQ(a.data()[1], p.value.data()[1]);
  ASSERT_EQ(opt->State().size(), 1u);
  EXPECT_EQ(opt->State()[0].first, "w.momentum");
  o.momentum = 0;
  EXPECT_TRUE(MakeOptimizer(o, {&a}, {"w"})->State().empty());
}

TEST(Optimizer, AGuardedStepChangesNothingOnNonFiniteCounts) {
  const Tensor finite = Tensor::FromVector({1}, {1.0f});
  const Tensor bad = Tensor::FromVector({1}, {std::nanf("")});
  const NonFiniteCounts dirty = QueueCountNonFinite({&bad});
  OptimizerOptions o;
  o.name = "adamw";
  Tensor value = Tensor::FromVector({1}, {1.0f});
  auto opt = MakeOptimizer(o, {&value}, {"w"});
  opt->Step({&finite}, &dirty);
  EXPECT_EQ(value.data()[0], 1.0f);
  EXPECT_EQ(opt->State()[0].second->data()[0], 0.0f);
}

TEST(Optimizer, BadOptionsAreClearErrors) {
  Tensor value = Tensor::FromVector({1}, {1.0f});
  auto error = [&](OptimizerOptions o) -> std::string {
    try {
      MakeOptimizer(o, {&value}, {"w"});
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  OptimizerOptions o;
  o.name = "lamb";
  EXPECT_EQ(error(o), "unknown optimizer 'lamb'; use adam, adamw, lion, sgd");
  o.name = "adamw";
  o.beta2 = 1.0f;
  EXPECT_EQ(error(o), "adamw: beta2 must be in [0, 1), not 1");
  o.beta2 = 0.999f;
  o.momentum = 0.9f;
  EXPECT_EQ(error(o),
            "adamw: momentum is not one of its settings (it reads beta1, "
            "beta2, eps)");
  o.momentum = 0;
  o.eps = 0;
  EXPECT_EQ(error(o), "adamw: eps must be a finite number above 0, not 0");
  o = OptimizerOptions();
  o.lr = -0.5f;
  EXPECT_EQ(error(o), "sgd: lr must be a finite number above 0, not -0.5");
}

// Each optimizer's own options, for a program that names it: the same
// optimizer as the registered name gives, and the same checks.
TEST(Optimizer, OwnOptionsMakeTheRegisteredOptimizers) {
  OptimizerOptions by_name;
  by_name.name = "adamw";
  by_name.lr = 0.01f;
  by_name.weight_decay = 0.1f;
  by_name.beta2 = 0.95f;
  AdamOptions adamw;
  adamw.lr = 0.01f;
  adamw.weight_decay = 0.1f;
  adamw.beta2 = 0.95f;
  adamw.decoupled = true;
  Tensor a = Tensor::FromVector({3}, {1.0f, -2.0f, 0.5f}), b = a.Clone();
  auto named = MakeOptimizer(by_name, {&a}, {"w"});
  auto own = MakeAdam(adamw, {&b}, {"w"});
  for (int step = 1; step <= 5; ++step) {
    const std::vector<double> g = GradAt(step, 3);
    const Tensor grad =
        Tensor::FromVector({3}, std::vector<float>(g.begin(), g.end()));
    named->Step({&grad});
    own->Step({&grad});
  }
  EXPECT_EQ(std::vector<float>(a.data(), a.data() + 3),
            std::vector<float>(b.data(), b.data() + 3));
  EXPECT_EQ(own->State().back().first, "adamw.step");

  LionOptions lion;
  lion.beta1 = 1.5f;
  EXPECT_THROW(
      {
        try {
          MakeLion(lion, {&b}, {"w"});
        } catch (const std::invalid_argument& e) {
          EXPECT_STREQ(e.what(), "lion: beta1 must be in [0, 1), not 1.5");
          throw;
        }
      },
      std::invalid_argument);
  EXPECT_THROW(MakeSgd(SgdOptions{0.1f, 0.0f, 0.0f}, {&b}, {}),
               std::invalid_argument);
  EXPECT_EQ(
      MakeSgd(SgdOptions{0.1f, 0.9f, 0.0f}, {&b}, {"w"})->State().front().first,
      "w.momentum");
}

// Lion as its paper's algorithm box (and lion-pytorch) writes it, in
// double: the oracle.
struct ReferenceLion {
  double lr, b1, b2, wd;
  std::vector<double> p, m;
  void Step(const std::vector<double>& g) {
    for (size_t i = 0; i < p.size(); ++i) {
      const double c = b1 * m[i] + (1 - b1) * g[i];
      p[i] *= 1 - lr * wd;
      p[i] -= lr * ((c > 0) - (c < 0));
      m[i] = b2 * m[i] + (1 - b2) * g[i];
    }
  }
};

TEST(Optimizer, LionMatchesItsReferenceAndIsRegistered) {
  const std::vector<std::string> names = OptimizerNames();
  EXPECT_EQ(names, (std::vector<std::string>{"adam", "adamw", "lion", "sgd"}));
  float beta2 = 0;
  EXPECT_TRUE(Reads(FindOptimizer("lion"), "beta2", &beta2));
  EXPECT_FLOAT_EQ(beta2, 0.99f);
  EXPECT_FALSE(Reads(FindOptimizer("lion"), "eps"));

  const size_t n = 9;
  OptimizerOptions o;
  o.name = "lion";
  o.lr = 0.003f;
  o.weight_decay = 0.1f;
  o.beta1 = 0.9f;
  o.beta2 = 0.99f;
  std::vector<float> start(n);
  for (size_t i = 0; i < n; ++i) start[i] = 0.5f - 0.2f * i;
  Tensor value = Tensor::FromVector({static_cast<int64_t>(n)}, start);
  auto opt = MakeOptimizer(o, {&value}, {"w"});
  ReferenceLion ref{o.lr,
                    o.beta1,
                    o.beta2,
                    o.weight_decay,
                    std::vector<double>(start.begin(), start.end()),
                    std::vector<double>(n, 0.0)};
  for (int step = 1; step <= 20; ++step) {
    std::vector<double> g = GradAt(step, n);
    g[4] = 0;  // sign(0) is 0: no step from the gradient alone at first.
    std::vector<float> gf(g.begin(), g.end());
    const Tensor grad = Tensor::FromVector({static_cast<int64_t>(n)}, gf);
    opt->Step({&grad});
    ref.Step(g);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_NEAR(value.data()[i], ref.p[i], 1e-5)
          << "step " << step << ", " << i;
    }
  }
  const auto state = opt->State();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].first, "w.exp_avg");
  for (size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(state[0].second->data()[i], ref.m[i], 1e-6) << i;
  }
  // A guarded step with a non-finite count changes nothing.
  const std::vector<float> before(value.data(), value.data() + n);
  const Tensor nan = Tensor::FromVector({1}, {std::nanf("")});
  const NonFiniteCounts bad = QueueCountNonFinite({&nan});
  const Tensor grad = Tensor::FromVector({static_cast<int64_t>(n)},
                                         std::vector<float>(n, 1.0f));
  opt->Step({&grad}, &bad);
  EXPECT_EQ(std::vector<float>(value.data(), value.data() + n), before);
}

}  // namespace
}  // namespace ringlet::nn
