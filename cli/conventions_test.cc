#include "cli/conventions.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ringlet::cli {
namespace {

// Parses `args` (after the program name) into a fresh app with one int
// option --n (default 7); returns ParseFlags' result.
int Parse(std::vector<std::string> args, int* n, std::string* help = nullptr) {
  CLI::App app("test program", "prog");
  UseConventions(app);
  *n = 7;
  app.add_option("--n", *n, "a number")->check(CLI::Range(1, 100));
  if (help != nullptr) *help = app.help();
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseFlags(app, static_cast<int>(argv.size()), argv.data());
}

TEST(ParseFlags, GoesOnWhenTheFlagsAreGood) {
  int n = 0;
  EXPECT_EQ(Parse({"--n=5"}, &n), -1);
  EXPECT_EQ(n, 5);
}

TEST(ParseFlags, ARepeatedFlagTakesItsLastValue) {
  int n = 0;
  EXPECT_EQ(Parse({"--n=5", "--n=9"}, &n), -1);
  EXPECT_EQ(n, 9);
}

TEST(ParseFlags, UsageErrorsExitWithTwo) {
  int n = 0;
  testing::internal::CaptureStderr();
  EXPECT_EQ(Parse({"--n=500"}, &n), kUsageError);
  EXPECT_EQ(Parse({"--no_such_flag"}, &n), kUsageError);
  EXPECT_EQ(Parse({"--n"}, &n), kUsageError);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("prog: "), std::string::npos) << err;
  EXPECT_NE(err.find("(see --help)"), std::string::npos) << err;
}

TEST(ParseFlags, HelpExitsWithZeroAndShowsDefaults) {
  int n = 0;
  std::string help;
  testing::internal::CaptureStdout();
  EXPECT_EQ(Parse({"--help"}, &n, &help), 0);
  testing::internal::GetCapturedStdout();
  EXPECT_NE(help.find("=7"), std::string::npos) << help;
}

}  // namespace
}  // namespace ringlet::cli
