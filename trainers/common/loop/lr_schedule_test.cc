#include "trainers/common/loop/lr_schedule.h"

#include <stdexcept>

#include "gtest/gtest.h"

namespace ringlet::trainers {
namespace {

LrSchedule Make(const std::string& kind, double warmup = 0) {
  LrSchedule s;
  s.kind = kind;
  s.base_lr = 0.4;
  s.warmup_epochs = warmup;
  s.epochs = 8;
  s.steps_per_epoch = 10;
  s.Check();
  return s;
}

TEST(LrSchedule, ConstantKeepsTheRate) {
  const LrSchedule s = Make("constant");
  EXPECT_EQ(s.At(1, 0), 0.4);
  EXPECT_EQ(s.At(8, 9), 0.4);
}

TEST(LrSchedule, StepDividesByTenAtHalfAndThreeQuarters) {
  const LrSchedule s = Make("step");
  EXPECT_DOUBLE_EQ(s.At(4, 9), 0.4);
  EXPECT_DOUBLE_EQ(s.At(5, 0), 0.04);
  EXPECT_DOUBLE_EQ(s.At(6, 9), 0.04);
  EXPECT_DOUBLE_EQ(s.At(7, 0), 0.004);
}

TEST(LrSchedule, CosineFallsFromTheRateToNearZero) {
  const LrSchedule s = Make("cosine");
  EXPECT_DOUBLE_EQ(s.At(1, 0), 0.4);
  EXPECT_NEAR(s.At(5, 0), 0.2, 1e-12);  // Half way.
  EXPECT_LT(s.At(8, 9), 0.001);
  EXPECT_GT(s.At(8, 9), 0);
  for (int e = 1; e <= 8; ++e) {
    for (int i = 1; i < 10; ++i) EXPECT_LE(s.At(e, i), s.At(e, i - 1));
  }
}

TEST(LrSchedule, WarmupRisesLinearlyThenHandsOver) {
  const LrSchedule s = Make("cosine", 2);  // 20 warmup steps.
  EXPECT_DOUBLE_EQ(s.At(1, 0), 0.4 / 20);
  EXPECT_DOUBLE_EQ(s.At(1, 9), 0.4 * 10 / 20);
  EXPECT_DOUBLE_EQ(s.At(2, 9), 0.4);
  EXPECT_DOUBLE_EQ(s.At(3, 0), 0.4);  // Cosine starts after warmup.
  EXPECT_LT(s.At(3, 1), 0.4);
}

TEST(LrSchedule, RefusesWhatCannotRun) {
  LrSchedule s = Make("constant");
  s.kind = "linear";
  EXPECT_THROW(s.Check(), std::invalid_argument);
  s = Make("constant");
  s.warmup_epochs = 8;
  EXPECT_THROW(s.Check(), std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::trainers
