#include "cli/run_main.h"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

namespace ringlet::cli {
namespace {

TEST(RunMain, PassesTheExitCodeThrough) {
  EXPECT_EQ(RunMain("p", [] { return 0; }), 0);
  EXPECT_EQ(RunMain("p", [] { return 3; }), 3);
}

TEST(RunMain, AnythingThrownIsOneLineAndExitOne) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(
      RunMain("p", []() -> int { throw std::runtime_error("disk full"); }),
      kRunError);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "p: error: disk full\n");

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunMain("p", []() -> int { throw std::bad_alloc(); }), kRunError);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "p: error: out of memory (an allocation failed)\n");

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunMain("p", []() -> int { throw 42; }), kRunError);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "p: error: an exception that is not a std::exception (a bug: "
            "please report it)\n");
}

}  // namespace
}  // namespace ringlet::cli
