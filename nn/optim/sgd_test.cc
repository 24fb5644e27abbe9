#include "nn/optim/sgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

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

TEST(Sgd, RejectsBadOptions) {
  EXPECT_THROW(Sgd({}, {0.0f, 0.0f, 0.0f}), std::invalid_argument);
  EXPECT_THROW(Sgd({}, {-1.0f, 0.0f, 0.0f}), std::invalid_argument);
  EXPECT_THROW(Sgd({}, {0.1f, 1.0f, 0.0f}), std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::nn
