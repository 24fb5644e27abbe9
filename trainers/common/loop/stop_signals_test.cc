#include "trainers/common/loop/stop_signals.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "cli/testing/child_process.h"

namespace ringlet::trainers {
namespace {

using cli::testing::ChildEnded;

ChildEnded InChild(const std::function<int()>& body) {
  return cli::testing::RunInChild(nullptr, body);
}

// Before: a signal during start-up ended the program with no line.
TEST(StopSignals, DuringStartUpTheProgramEndsSayingSo) {
  const ChildEnded e = InChild([] {
    HandleStopSignals("lenet_scratch", StopMode::kStartUp);
    std::raise(SIGINT);
    return 0;
  });
  EXPECT_EQ(e.signal, SIGINT);
  EXPECT_EQ(e.stderr_text,
            "lenet_scratch: stopped by SIGINT during start-up; nothing was "
            "trained\n");
}

TEST(StopSignals, WithoutACheckpointFolderTrainingEndsAtOnceSayingSo) {
  const ChildEnded e = InChild([] {
    HandleStopSignals("resnet_dp", StopMode::kStartUp);
    HandleStopSignals("resnet_dp", StopMode::kEndNow);
    std::raise(SIGTERM);
    return 0;
  });
  EXPECT_EQ(e.signal, SIGTERM);
  EXPECT_EQ(e.stderr_text,
            "resnet_dp: stopped by SIGTERM during training; no checkpoint "
            "(pass --checkpoint_dir to keep one)\n");
}

// The first signal is recorded for the loop; before, a second one ended
// the program with no line.
TEST(StopSignals, AfterStepTheFirstIsRecordedAndASecondEndsSayingSo) {
  const ChildEnded e = InChild([] {
    HandleStopSignals("p", StopMode::kAfterStep);
    std::raise(SIGUSR1);
    if (*StopRequested() != SIGUSR1) return 3;
    std::raise(SIGUSR1);
    return 4;
  });
  EXPECT_EQ(e.signal, SIGUSR1);
  EXPECT_EQ(e.stderr_text,
            "p: a second SIGUSR1: ended at once, without a checkpoint of this "
            "step (the last one written stays)\n");
}

TEST(StopSignals, OnlyTheSpeakingProcessWritesTheLine) {
  const ChildEnded e = InChild([] {
    HandleStopSignals("p", StopMode::kEndNow, /*speak=*/false);
    std::raise(SIGHUP);
    return 0;
  });
  EXPECT_EQ(e.signal, SIGHUP);
  EXPECT_EQ(e.stderr_text, "");
  EXPECT_EQ(SignalName(SIGUSR2), "SIGUSR2");
  EXPECT_EQ(StopSignals().size(), 5u);
}

}  // namespace
}  // namespace ringlet::trainers
