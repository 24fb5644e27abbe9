#include "nn/optim/sgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace ringlet::nn {
namespace {

TEST(Sgd, PlainStepAndWeightDecay) {
  Parameter p{"w", Tensor::FromVector({2}, {1.0f, -2.0f}),
              Tensor::FromVector({2}, {0.5f, 0.5f})};
  Sgd sgd({&p}, {0.1f, 0.0f, 0.0f});
  sgd.Step();
  EXPECT_FLOAT_EQ(p.value.data()[0], 0.95f);
  EXPECT_FLOAT_EQ(p.value.data()[1], -2.05f);
  Sgd decay({&p}, {0.1f, 0.0f, 0.5f});
  decay.Step();  // g + 0.5 p = 0.5 + 0.475
  EXPECT_FLOAT_EQ(p.value.data()[0], 0.95f - 0.1f * (0.5f + 0.475f));
  sgd.ZeroGrad();
  EXPECT_EQ(p.grad.data()[0], 0.0f);
}

TEST(Sgd, MomentumAccumulates) {
  Parameter p{"w", Tensor::FromVector({1}, {0.0f}),
              Tensor::FromVector({1}, {1.0f})};
  Sgd sgd({&p}, {1.0f, 0.9f, 0.0f});
  sgd.Step();  // v = 1, p = -1
  sgd.Step();  // v = 1.9, p = -2.9
  EXPECT_FLOAT_EQ(p.value.data()[0], -2.9f);
}

// A step guarded by non-finite counts changes nothing (velocity included)
// when any count is non-zero, and is the plain step otherwise.
TEST(Sgd, AGuardedStepSkipsItselfOnNonFiniteCounts) {
  const Tensor finite = Tensor::FromVector({1}, {1.0f});
  const Tensor bad = Tensor::FromVector({2}, {1.0f, std::nanf("")});
  const NonFiniteCounts clean = QueueCountNonFinite({&finite});
  const NonFiniteCounts dirty = QueueCountNonFinite({&finite, &bad});
  Parameter p{"w", Tensor::FromVector({1}, {0.0f}),
              Tensor::FromVector({1}, {1.0f})};
  Sgd sgd({&p}, {1.0f, 0.9f, 0.0f});
  sgd.Step(&dirty);
  EXPECT_EQ(p.value.data()[0], 0.0f);
  EXPECT_EQ(sgd.velocity()[0].data()[0], 0.0f);
  sgd.Step(&clean);  // v = 1, p = -1
  EXPECT_FLOAT_EQ(p.value.data()[0], -1.0f);
}

// The list form is the per-tensor update on each, with and without
// momentum, and Sgd::ZeroGrad zeroes every gradient.
TEST(Sgd, UpdatingAllAtOnceIsUpdatingEach) {
  for (float momentum : {0.0f, 0.9f}) {
    const SgdOptions options{0.1f, momentum, 0.01f};
    std::vector<Tensor> a, b, grads, va, vb;
    for (int t = 0; t < 3; ++t) {
      std::vector<float> v(t + 2), g(t + 2);
      for (size_t i = 0; i < v.size(); ++i) {
        v[i] = 0.5f * t - 0.25f * i;
        g[i] = 0.125f * (i + 1) - 0.3f * t;
      }
      const Shape shape = {static_cast<int64_t>(v.size())};
      a.push_back(Tensor::FromVector(shape, v));
      b.push_back(Tensor::FromVector(shape, v));
      grads.push_back(Tensor::FromVector(shape, g));
      va.push_back(Tensor::FromVector(shape, g));
      vb.push_back(Tensor::FromVector(shape, g));
    }
    std::vector<Tensor*> values, velocities;
    std::vector<const Tensor*> gs;
    for (int t = 0; t < 3; ++t) {
      SgdUpdate(a[t], grads[t], momentum > 0 ? &va[t] : nullptr, options);
      values.push_back(&b[t]);
      gs.push_back(&grads[t]);
      velocities.push_back(&vb[t]);
    }
    SgdUpdateAll(values, gs, momentum > 0 ? velocities : std::vector<Tensor*>(),
                 options);
    for (int t = 0; t < 3; ++t) {
      for (int64_t i = 0; i < a[t].numel(); ++i) {
        EXPECT_EQ(b[t].data()[i], a[t].data()[i]) << momentum << " " << t;
        EXPECT_EQ(vb[t].data()[i], va[t].data()[i]) << momentum << " " << t;
      }
    }
    EXPECT_THROW(SgdUpdateAll(values, {gs[0]}, velocities, options),
                 std::invalid_argument);
  }
  Parameter p{"w", Tensor::FromVector({2}, {1.0f, 2.0f}),
              Tensor::FromVector({2}, {3.0f, 4.0f})};
  Parameter q{"b", Tensor::FromVector({1}, {1.0f}),
              Tensor::FromVector({1}, {5.0f})};
  Sgd sgd({&p, &q}, {0.1f, 0.0f, 0.0f});
  sgd.ZeroGrad();
  EXPECT_EQ(p.grad.data()[0], 0.0f);
  EXPECT_EQ(p.grad.data()[1], 0.0f);
  EXPECT_EQ(q.grad.data()[0], 0.0f);
}

TEST(Sgd, RejectsBadOptions) {
  EXPECT_THROW(Sgd({}, {0.0f, 0.0f, 0.0f}), std::invalid_argument);
  EXPECT_THROW(Sgd({}, {-1.0f, 0.0f, 0.0f}), std::invalid_argument);
  EXPECT_THROW(Sgd({}, {0.1f, 1.0f, 0.0f}), std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::nn
