#include "trainers/common/output_files.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ringlet::trainers {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The message of the runtime_error fn throws, or "" when it throws none.
template <typename Fn>
std::string ErrorOf(Fn fn) {
  try {
    fn();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(CheckOutputFilesTest, AcceptsWritableDistinctFilesAndSkipsEmptyOnes) {
  const std::string dir = TempDir();
  EXPECT_EQ(ErrorOf([&] {
              CheckOutputFiles({{"--metrics_out", dir + "/m.jsonl"},
                                {"--plot_out", ""},
                                {"--params_out", dir + "/p.bin"}});
            }),
            "");
  // The probe leaves nothing behind.
  struct stat st;
  EXPECT_NE(::stat((dir + "/m.jsonl").c_str(), &st), 0);
}

TEST(CheckOutputFilesTest, MissingFolderNamesTheFlagAndThePath) {
  const std::string error = ErrorOf([] {
    CheckOutputFiles({{"--params_out", "/nonexistent/p.bin"}});
  });
  EXPECT_NE(error.find("--params_out: cannot write /nonexistent/p.bin"),
            std::string::npos)
      << error;
}

TEST(CheckOutputFilesTest, AFolderInPlaceOfAFileIsRefused) {
  const std::string error = ErrorOf([] {
    CheckOutputFiles({{"--plot_out", TempDir()}});
  });
  EXPECT_NE(error.find("--plot_out: " + TempDir() + " is a folder"),
            std::string::npos)
      << error;
}

TEST(CheckOutputFilesTest, TwoFlagsNamingOneFileAreRefused) {
  const std::string dir = TempDir();
  // The same file spelt two ways: through "." and directly.
  const std::string error = ErrorOf([&] {
    CheckOutputFiles({{"--metrics_out", dir + "/run.out"},
                      {"--plot_out", dir + "/./run.out"}});
  });
  EXPECT_NE(error.find("--plot_out and --metrics_out name the same file"),
            std::string::npos)
      << error;
}

TEST(CheckOutputFilesTest, ReadOnlyFolderIsRefusedUpFront) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write into any folder";
  const std::string dir = TempDir() + "/read_only";
  ::mkdir(dir.c_str(), 0555);
  const std::string error = ErrorOf([&] {
    CheckOutputFiles({{"--plot_out", dir + "/p.svg"}});
  });
  EXPECT_NE(error.find("--plot_out: cannot write"), std::string::npos) << error;
}

TEST(WriteFileAtomicallyTest, ReplacesTheFileWholeAndLeavesNoTemporary) {
  const std::string dir = TempDir() + "/atomic";
  ::mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/out.txt";
  WriteFileAtomically(path, "first version, longer than the second\n", "--x");
  WriteFileAtomically(path, "second\n", "--x");
  EXPECT_EQ(ReadAll(path), "second\n");
  // Only the file itself is in the folder: no temporary was left behind.
  std::vector<std::string> names;
  DIR* folder = ::opendir(dir.c_str());
  ASSERT_NE(folder, nullptr);
  while (const dirent* entry = ::readdir(folder)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(folder);
  EXPECT_EQ(names, std::vector<std::string>{"out.txt"});
}

TEST(WriteFileAtomicallyTest, FailureNamesTheFlagAndKeepsTheOldFile) {
  const std::string error = ErrorOf(
      [] { WriteFileAtomically("/nonexistent/out.txt", "x", "--plot_out"); });
  EXPECT_NE(error.find("--plot_out: cannot write /nonexistent/out.txt"),
            std::string::npos)
      << error;
}

TEST(ResolveUserPathTest, RelativePathsStartWhereBazelRunWasTyped) {
  ::setenv("BUILD_WORKING_DIRECTORY", "/home/me", 1);
  EXPECT_EQ(ResolveUserPath("runs/m.jsonl"), "/home/me/runs/m.jsonl");
  EXPECT_EQ(ResolveUserPath("/abs/m.jsonl"), "/abs/m.jsonl");
  EXPECT_EQ(ResolveUserPath(""), "");
  ::unsetenv("BUILD_WORKING_DIRECTORY");
  EXPECT_EQ(ResolveUserPath("runs/m.jsonl"), "runs/m.jsonl");
}

}  // namespace
}  // namespace ringlet::trainers
