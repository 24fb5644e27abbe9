// A crash prints where it happened: the signal, then frames as
// module+offset, and the process still dies of the same signal.
#include "cli/crash_report.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace ringlet::cli {
namespace {

[[gnu::noinline]] void CrashHere() { raise(SIGSEGV); }

TEST(CrashReport, ASegfaultPrintsItsBacktraceAndStillKills) {
  if (!InstallCrashReport()) {
    GTEST_SKIP() << "another handler (a sanitizer's) takes SIGSEGV here";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        InstallCrashReport();
        CrashHere();
      },
      ::testing::KilledBySignal(SIGSEGV),
      "fatal signal 11 \\(SIGSEGV\\).*\n  #0 .*crash_report_test\\+0x");
}

TEST(CrashReport, AnAbortPrintsItsBacktrace) {
  if (!InstallCrashReport()) {
    GTEST_SKIP() << "another handler (a sanitizer's) takes SIGSEGV here";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(abort(), ::testing::KilledBySignal(SIGABRT),
              "fatal signal 6 \\(SIGABRT\\); backtrace");
}

}  // namespace
}  // namespace ringlet::cli
