#include "trainers/common/stop_signals.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace ringlet::trainers {
namespace {

struct Ended {
  int signal = 0;  // The signal that ended the child; 0: it exited.
  int exit_code = -1;
  std::string stderr_text;
};

Ended InChild(const std::function<int()>& body) {
  int err[2];
  if (::pipe(err) != 0) return {};
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(err[0]);
    ::dup2(err[1], 2);
    ::_exit(body());
  }
  ::close(err[1]);
  Ended e;
  char buf[512];
  ssize_t n;
  while ((n = ::read(err[0], buf, sizeof(buf))) > 0)
    e.stderr_text.append(buf, n);
  ::close(err[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
  return e;
}

// Before: a signal during start-up ended the program with no line.
TEST(StopSignals, DuringStartUpTheProgramEndsSayingSo) {
  const Ended e = InChild([] {
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
  const Ended e = InChild([] {
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
  const Ended e = InChild([] {
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
  const Ended e = InChild([] {
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
