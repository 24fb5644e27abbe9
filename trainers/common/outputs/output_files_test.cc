#include "trainers/common/outputs/output_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
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

// An output over the run's own files: before, --metrics_out=DIR/x.lock
// replaced the checkpoint folder's lock (letting a second run in) and
// --metrics_out naming the training data replaced it with JSON, exit 0.
TEST(CheckOutputsKeepTest, AnOutputMayNotReplaceWhatTheRunReadsOrHolds) {
  const std::string dir = TempDir() + "/keep";
  ::mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/train.npy") << "data";
  std::ofstream(dir + "/x.lock") << "pid";
  ::unlink((dir + "/link.npy").c_str());
  ASSERT_EQ(
      ::symlink((dir + "/train.npy").c_str(), (dir + "/link.npy").c_str()), 0);
  ::unlink((dir + "/hard.npy").c_str());
  ASSERT_EQ(::link((dir + "/train.npy").c_str(), (dir + "/hard.npy").c_str()),
            0);
  const std::vector<KeptFile> kept = {
      {"the training data", dir + "/train.npy"},
      {"the lock of --checkpoint_dir", dir + "/x.lock"},
      {"the checkpoint", dir + "/x.ckpt"}};  // Not written yet.
  auto error = [&](const std::string& path) {
    return ErrorOf([&] { CheckOutputsKeep({{"--metrics_out", path}}, kept); });
  };
  EXPECT_EQ(error(dir + "/x.lock"),
            "--metrics_out: " + dir +
                "/x.lock is the lock of --checkpoint_dir, which this run must "
                "not replace; name another file");
  EXPECT_NE(error(dir + "/./train.npy").find("is the training data"),
            std::string::npos);
  // Through a link, a hard link, or before the file exists.
  EXPECT_NE(error(dir + "/link.npy").find("is the training data"),
            std::string::npos);
  EXPECT_NE(error(dir + "/hard.npy").find("is the training data"),
            std::string::npos);
  EXPECT_NE(error(dir + "/x.ckpt").find("is the checkpoint"),
            std::string::npos);
  EXPECT_EQ(error(dir + "/metrics.jsonl"), "");
  EXPECT_EQ(error("/dev/stdout"), "");
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

TEST(WriteOutputFileTest, ReplacesTheFileWholeAndLeavesNoTemporary) {
  const std::string dir = TempDir() + "/atomic";
  ::mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/out.txt";
  WriteOutputFile(path, "first version, longer than the second\n", "--x");
  WriteOutputFile(path, "second\n", "--x");
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

TEST(WriteOutputFileTest, FailureNamesTheFlagAndKeepsTheOldFile) {
  const std::string error = ErrorOf(
      [] { WriteOutputFile("/nonexistent/out.txt", "x", "--plot_out"); });
  EXPECT_NE(error.find("--plot_out: cannot write /nonexistent/out.txt"),
            std::string::npos)
      << error;
}

// A fresh folder of its own under the test's temporary folder.
std::string FreshDir(const std::string& name) {
  const std::string dir = TempDir() + "/" + name;
  if (std::system(("rm -rf '" + dir + "'").c_str()) != 0) return dir;
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

std::vector<std::string> NamesIn(const std::string& dir) {
  std::vector<std::string> names;
  DIR* folder = ::opendir(dir.c_str());
  if (folder == nullptr) return names;
  while (const dirent* entry = ::readdir(folder)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(folder);
  std::sort(names.begin(), names.end());
  return names;
}

mode_t TypeOf(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & S_IFMT;
}

// A character device like /dev/null (1, 3) or /dev/full (1, 7) in `dir`,
// so a bug cannot replace the machine's own; "" where mknod is not allowed.
std::string MakeCharDevice(const std::string& dir, const std::string& name,
                           unsigned minor) {
  const std::string path = dir + "/" + name;
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) != 0) return "";
  // A nodev mount refuses to open it.
  const int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) return "";
  ::close(fd);
  return path;
}

TEST(WriteOutputFileTest, ACharacterDeviceIsWrittenThroughNotReplaced) {
  const std::string dir = FreshDir("chardev");
  std::string null = MakeCharDevice(dir, "null", 3);
  if (null.empty()) null = "/dev/null";  // Written through, never replaced.
  WriteOutputFile(null, "epoch 1\n", "--metrics_out");
  WriteOutputFile(null, "epoch 1\nepoch 2\n", "--metrics_out");
  EXPECT_EQ(TypeOf(null), S_IFCHR);
  EXPECT_EQ(NamesIn(dir), null == "/dev/null"
                              ? std::vector<std::string>{}
                              : std::vector<std::string>{"null"});
}

TEST(WriteOutputFileTest, ADiskFullDeviceIsAnErrorNamingTheFlag) {
  const std::string dir = FreshDir("devfull");
  const std::string full = MakeCharDevice(dir, "full", 7);
  if (full.empty()) GTEST_SKIP() << "mknod is not allowed here";
  EXPECT_EQ(ErrorOf([&] { CheckOutputFiles({{"--plot_out", full}}); }), "");
  const std::string error =
      ErrorOf([&] { WriteOutputFile(full, "<svg/>", "--plot_out"); });
  EXPECT_EQ(error, "--plot_out: cannot write " + full +
                       " (No space left on device); free some space, or "
                       "name a file on another disk");
  EXPECT_EQ(TypeOf(full), S_IFCHR);
}

TEST(WriteOutputFileTest, AFifoGetsWhatTheFileGainedAsAStream) {
  const std::string dir = FreshDir("fifo");
  const std::string fifo = dir + "/metrics";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // Nobody reads it: refused before any work, not a hang.
  EXPECT_EQ(ErrorOf([&] {
              CheckOutputFiles({{"--metrics_out", fifo}});
            }),
            "--metrics_out: no process is reading the FIFO " + fifo +
                "; start its reader first");
  std::string got;
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  EXPECT_EQ(ErrorOf([&] { CheckOutputFiles({{"--metrics_out", fifo}}); }), "");
  // A file that grows adds its new lines; the reader sees one stream.
  WriteOutputFile(fifo, "a\n", "--metrics_out");
  WriteOutputFile(fifo, "a\nb\n", "--metrics_out");
  char buffer[64];
  const ssize_t n = ::read(reader, buffer, sizeof(buffer));
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buffer, n), "a\nb\n");
  ::close(reader);
  // The reader gone: an error (EPIPE), not the end of the process.
  const std::string error =
      ErrorOf([&] { WriteOutputFile(fifo, "a\nb\nc\n", "--metrics_out"); });
  EXPECT_NE(error.find("the process reading it went away"), std::string::npos)
      << error;
  EXPECT_EQ(TypeOf(fifo), S_IFIFO);
}

TEST(WriteOutputFileTest, StdoutRedirectedToAFileIsAppendedThroughItsFd) {
  const std::string dir = FreshDir("own_fd");
  const std::string log = dir + "/log.txt";
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "header\n", 7), 7);  // What the program printed.
  struct stat before;
  ASSERT_EQ(::fstat(fd, &before), 0);
  const std::string path = "/dev/fd/" + std::to_string(fd);
  EXPECT_EQ(ErrorOf([&] { CheckOutputFiles({{"--metrics_out", path}}); }), "");
  WriteOutputFile(path, "{\"epoch\":1}\n", "--metrics_out");
  ASSERT_EQ(::write(fd, "epoch 2/2\n", 10), 10);  // Printing goes on.
  WriteOutputFile(path, "{\"epoch\":1}\n{\"epoch\":2}\n", "--metrics_out");
  ::close(fd);
  // The same file (not replaced), every line in the order written.
  struct stat after;
  ASSERT_EQ(::stat(log.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(ReadAll(log), "header\n{\"epoch\":1}\nepoch 2/2\n{\"epoch\":2}\n");
  EXPECT_NE(ErrorOf([] {
              WriteOutputFile("/dev/stdout", "x", "--checkpoint_dir",
                              /*stream_ok=*/false);
            }).find("is this process's own output"),
            std::string::npos);
}

TEST(WriteOutputFileTest, ACheckpointMustBeARegularFile) {
  EXPECT_EQ(ErrorOf([] {
              WriteOutputFile("/dev/null", "x", "--checkpoint_dir",
                              /*stream_ok=*/false);
            }),
            "--checkpoint_dir: /dev/null is a device, not a regular file; "
            "this file is read back later, so name a regular file");
  EXPECT_NE(ErrorOf([] {
              CheckOutputFiles({{"--checkpoint_dir", "/dev/null", false}});
            }),
            "");
}

TEST(WriteOutputFileTest, ASymlinkIsFollowedAndStays) {
  const std::string dir = FreshDir("symlink");
  ::mkdir((dir + "/real").c_str(), 0755);
  const std::string target = dir + "/real/out.csv";
  WriteOutputFile(target, "old\n", "--csv_out");
  ::chmod(target.c_str(), 0600);
  const std::string link = dir + "/link.csv";
  ASSERT_EQ(::symlink("real/out.csv", link.c_str()), 0);
  EXPECT_EQ(ErrorOf([&] { CheckOutputFiles({{"--csv_out", link}}); }), "");
  WriteOutputFile(link, "new\n", "--csv_out");
  EXPECT_EQ(TypeOf(link), S_IFLNK);
  EXPECT_EQ(ReadAll(target), "new\n");
  struct stat st;
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);  // Its permissions kept.
  EXPECT_EQ(NamesIn(dir + "/real"), std::vector<std::string>{"out.csv"});
  // Two flags, one through the link: the same file.
  EXPECT_NE(ErrorOf([&] {
              CheckOutputFiles({{"--csv_out", link}, {"--plot_out", target}});
            }).find("name the same file"),
            std::string::npos);
}

TEST(WriteOutputFileTest, ADanglingSymlinkIsRefusedWithWhereItPoints) {
  const std::string dir = FreshDir("dangling");
  const std::string link = dir + "/out.svg";
  ASSERT_EQ(::symlink("/nonexistent/target.svg", link.c_str()), 0);
  const std::string error = ErrorOf([&] {
    CheckOutputFiles({{"--plot_out", link}});
  });
  EXPECT_NE(error.find("--plot_out: " + link +
                       " is a symbolic link to /nonexistent/target.svg, "
                       "which cannot be reached"),
            std::string::npos)
      << error;
  EXPECT_NE(ErrorOf([&] { WriteOutputFile(link, "x", "--plot_out"); }), "");
  EXPECT_EQ(TypeOf(link), S_IFLNK);
}

TEST(WriteOutputFileTest, ASocketAndABlockDeviceAreRefused) {
  const std::string dir = FreshDir("socket");
  // A socket's path must fit sun_path (108 bytes): the test's folder may
  // not, so it lives under /tmp.
  char short_dir[] = "/tmp/ringlet-sock-XXXXXX";
  ASSERT_NE(::mkdtemp(short_dir), nullptr);
  const std::string path = std::string(short_dir) + "/s";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    EXPECT_NE(ErrorOf([&] {
                WriteOutputFile(path, "x", "--csv_out");
              }).find("is a socket"),
              std::string::npos);
    EXPECT_EQ(TypeOf(path), S_IFSOCK);
  }
  ::close(fd);
  ::unlink(path.c_str());
  ::rmdir(short_dir);
  const std::string disk = dir + "/disk";
  if (::mknod(disk.c_str(), S_IFBLK | 0600, makedev(7, 200)) != 0) {
    GTEST_SKIP() << "mknod is not allowed here";
  }
  const std::string error =
      ErrorOf([&] { WriteOutputFile(disk, "x", "--params_out"); });
  EXPECT_EQ(error, "--params_out: " + disk +
                       " is a block device (a disk), which ringlet never "
                       "writes over; name a regular file");
  EXPECT_EQ(TypeOf(disk), S_IFBLK);
}

TEST(CheckOutputFilesTest, RemovesTemporariesOfKilledRunsOnly) {
  const std::string dir = FreshDir("stale");
  const std::string path = dir + "/lenet_scratch.ckpt";
  // A process that has ended: its pid is free (reaped).
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);
  const std::string ours = TemporaryPathFor(path);
  const std::string host_and_pid = ours.substr(ours.rfind(".tmp-") + 5);
  const std::string host = host_and_pid.substr(0, host_and_pid.rfind('-'));
  const std::string dead = path + ".tmp-" + host + "-" + std::to_string(child);
  const std::string old_style = path + ".tmp-" + std::to_string(child);
  const std::string alive = path + ".tmp-" + host + "-1";  // init lives.
  const std::string elsewhere =
      path + ".tmp-otherhost-" + std::to_string(child);
  for (const std::string& f : {dead, old_style, alive, elsewhere}) {
    WriteOutputFile(f, "half a checkpoint", "--x");
  }
  CheckOutputFiles({{"--checkpoint_dir", path, false}});
  std::vector<std::string> kept = {
      "lenet_scratch.ckpt.tmp-" + host + "-1",
      "lenet_scratch.ckpt.tmp-otherhost-" + std::to_string(child)};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(NamesIn(dir), kept);
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
