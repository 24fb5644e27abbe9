#include "cli/conventions.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ringlet::cli {
namespace {

// Parses `args` (after the program name) into a fresh app with one int
// option --n (default 7); returns ParseFlags' result.
int Parse(std::vector<std::string> args, int* n, std::string* help = nullptr,
          bool* fast = nullptr) {
  CLI::App app("test program", "prog");
  UseConventions(app);
  *n = 7;
  app.add_option("--n", *n, "a number")->check(CLI::Range(1, 100));
  bool unused = true;
  app.add_option("--go_fast", fast != nullptr ? *fast : unused, "a switch");
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  const int code = ParseFlags(app, static_cast<int>(argv.size()), argv.data());
  if (help != nullptr) *help = app.help();
  return code;
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

// "--flag=" is the flag's empty value: before, CLI11 took the next
// argument as the value (allreduce_bench --op= -e 1K read "-e" as --op).
TEST(ParseFlags, AnEmptyValueIsEmptyNotTheNextArgument) {
  int n = 0;
  testing::internal::CaptureStderr();
  EXPECT_EQ(Parse({"--n=", "--n=5"}, &n), kUsageError);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("--n=5"), std::string::npos) << err;
  CLI::App app("test program", "prog");
  UseConventions(app);
  std::string text = "default", other;
  app.add_option("--text", text, "some text");
  app.add_option("--other", other, "more text");
  std::vector<std::string> args = {"prog", "--text=", "--other=x"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  EXPECT_EQ(ParseFlags(app, static_cast<int>(argv.size()), argv.data()), -1);
  EXPECT_EQ(text, "");
  EXPECT_EQ(other, "x");
}

TEST(ParseFlags, AChoiceNotAmongTheChoicesIsNamedInQuotes) {
  CLI::App app("test program", "prog");
  UseConventions(app);
  std::string op = "sum";
  app.add_option("--op", op, "an op")->check(CLI::IsMember({"sum", "max"}));
  std::vector<std::string> args = {"prog", "--op="};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  testing::internal::CaptureStderr();
  EXPECT_EQ(ParseFlags(app, static_cast<int>(argv.size()), argv.data()),
            kUsageError);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "prog: --op: '' is not one of sum, max (see --help)\n");
}

TEST(ParseFlags, HelpExitsWithZeroAndShowsDefaults) {
  int n = 0;
  std::string help;
  testing::internal::CaptureStdout();
  EXPECT_EQ(Parse({"--help"}, &n, &help), 0);
  testing::internal::GetCapturedStdout();
  EXPECT_NE(help.find("=7"), std::string::npos) << help;
  // The range's type once: "INT in [1 - 100]", not "INT:INT in [1 - 100]".
  EXPECT_NE(help.find("--n INT in [1 - 100]=7"), std::string::npos) << help;
}

TEST(ParseFlags, DashedSpellingsAreAliases) {
  int n = 0;
  bool fast = true;
  EXPECT_EQ(Parse({"--go-fast=false", "--n=3"}, &n, nullptr, &fast), -1);
  EXPECT_FALSE(fast);
  EXPECT_EQ(n, 3);
}

TEST(ParseFlags, AnUnknownFlagNamesTheNearestKnownOne) {
  int n = 0;
  testing::internal::CaptureStderr();
  EXPECT_EQ(Parse({"--go_fst=true"}, &n), kUsageError);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "prog: --go_fst=true: no such flag; did you mean --go_fast? (see "
            "--help)\n");
}

TEST(ParseFlags, BooleansReadAsWordsInHelpAndPrintFlagsExits) {
  int n = 0;
  std::string help;
  testing::internal::CaptureStdout();
  EXPECT_EQ(Parse({"--print_flags", "--n=4"}, &n, &help), 0);
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("n=4"), std::string::npos) << printed;
  EXPECT_NE(printed.find("go_fast=true"), std::string::npos) << printed;
  EXPECT_NE(help.find("--go_fast true|false=true"), std::string::npos) << help;
  EXPECT_EQ(help.find("BOOLEAN"), std::string::npos) << help;
}

TEST(NearestFlag, FindsCloseNamesOnly) {
  const std::vector<std::string> known = {"--epochs", "--batch_size", "--lr"};
  EXPECT_EQ(NearestFlag("--epoch", known), "--epochs");
  EXPECT_EQ(NearestFlag("--batchsize", known), "--batch_size");
  EXPECT_EQ(NearestFlag("--batch-sise", known), "--batch_size");
  EXPECT_EQ(NearestFlag("--devices", known), "");
  EXPECT_EQ(NearestFlag("--l", known), "--lr");
}

// Runs `validator` on `text`: "" when accepted, else its message.
std::string Check(const CLI::Validator& validator, std::string text) {
  return validator(text);
}

TEST(RealIn, RefusesNanInfinityAndWhatIsOutsideTheRange) {
  const CLI::Validator v = RealIn(1.01, 1024);
  EXPECT_EQ(Check(v, "2"), "");
  EXPECT_EQ(Check(v, "1.01"), "");
  EXPECT_EQ(Check(v, "1023.9"), "");
  for (const char* bad : {"nan", "NaN", "-nan", "inf", "-inf", "infinity",
                          "1e400", "1", "1024", "2x", "", "0x10000"}) {
    EXPECT_EQ(Check(v, bad),
              std::string("must be a number at least 1.01 and below 1024, "
                          "got '") +
                  bad + "'")
        << bad;
  }
  // No upper bound: infinity is still not a number a run can use.
  const CLI::Validator open =
      RealIn(0, std::numeric_limits<double>::infinity());
  EXPECT_EQ(Check(open, "1e300"), "");
  EXPECT_EQ(Check(open, "inf"), "must be a number 0 or more, got 'inf'");
}

TEST(Unsigned64, TakesEveryUint64AndNothingElse) {
  const CLI::Validator v = Unsigned64();
  EXPECT_EQ(Check(v, "0"), "");
  EXPECT_EQ(Check(v, "42"), "");
  EXPECT_EQ(Check(v, "18446744073709551615"), "");
  for (const char* bad :
       {"-1", "18446744073709551616", "99999999999999999999999", "1.5", "+3",
        " 3", "", "0x10", "1e3"}) {
    EXPECT_NE(Check(v, bad).find("must be a whole number from 0 to "
                                 "18446744073709551615"),
              std::string::npos)
        << bad;
  }
}

TEST(Unsigned64, AFlagOutOfRangeIsAUsageError) {
  CLI::App app("test program", "prog");
  UseConventions(app);
  uint64_t seed = 0;
  app.add_option("--seed", seed, "a seed")->check(Unsigned64());
  std::vector<std::string> args = {"prog", "--seed=-1"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  testing::internal::CaptureStderr();
  EXPECT_EQ(ParseFlags(app, 2, argv.data()), kUsageError);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("--seed"), std::string::npos) << err;
}

}  // namespace
}  // namespace ringlet::cli
