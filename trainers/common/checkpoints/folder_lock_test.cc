#include "trainers/common/checkpoints/folder_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "gtest/gtest.h"

namespace ringlet::trainers {
namespace {

std::string Error(const std::string& dir) {
  try {
    FolderLock second(dir, "resnet_dp", "--checkpoint_dir");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(FolderLock, ASecondRunIsRefusedWithWhoHoldsIt) {
  const std::string dir = ::testing::TempDir();
  auto first =
      std::make_unique<FolderLock>(dir, "resnet_dp", "--checkpoint_dir");
  const std::string error = Error(dir);
  EXPECT_NE(error.find("--checkpoint_dir: " + dir +
                       " is in use by another run of resnet_dp (pid " +
                       std::to_string(::getpid()) + " on host "),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("give this run its own --checkpoint_dir"),
            std::string::npos);
  // Another program's lock in the same folder is its own.
  FolderLock other(dir, "lenet_scratch", "--checkpoint_dir");
  first.reset();
  EXPECT_EQ(Error(dir), "");  // Released with its holder.
}

TEST(FolderLock, AKilledHolderLeavesNoLock) {
  const std::string dir = ::testing::TempDir();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    FolderLock held(dir, "resnet_dp", "--checkpoint_dir");
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char byte;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  EXPECT_NE(Error(dir).find("(pid " + std::to_string(child)),
            std::string::npos);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(Error(dir), "");
}

}  // namespace
}  // namespace ringlet::trainers
