#include "cli/standard_streams.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <string>

#include "cli/run_main.h"
#include "cli/testing/child_process.h"

namespace ringlet::cli {
namespace {

using testing::ChildEnded;

// RunMain("p", body) in a child whose stdout `redirect` sets.
ChildEnded RunChild(const std::function<void()>& redirect,
                    const std::function<int()>& body) {
  return testing::RunInChild(redirect, [&] { return RunMain("p", body); });
}

// stdout a pipe whose reader has gone (`| head -1` after its line).
void ClosedPipe() {
  int out[2];
  if (::pipe(out) != 0) ::_exit(90);
  ::close(out[0]);
  ::dup2(out[1], 1);
}

void DevFull() {
  const int fd = ::open("/dev/full", O_WRONLY);
  if (fd < 0) ::_exit(91);
  ::dup2(fd, 1);
}

// Before: killed by SIGPIPE, no line (the shell's exit 141).
TEST(StandardStreams, AClosedPipeIsAnErrorNotADeath) {
  const ChildEnded e = RunChild(ClosedPipe, [] {
    for (int i = 0; i < 1000; ++i) std::cout << "line " << i << std::endl;
    return 0;
  });
  EXPECT_EQ(e.signal, 0);
  EXPECT_EQ(e.exit_code, kRunError);
  EXPECT_EQ(e.stderr_text,
            "p: error: standard output could not be written (Broken pipe: the "
            "program reading it has ended)\n");
}

// Before: exit 0, every line lost.
TEST(StandardStreams, AFullDiskEndsTheRunNonZero) {
  const ChildEnded streams = RunChild(DevFull, [] {
    std::cout << "a result" << std::endl;
    return 0;
  });
  EXPECT_EQ(streams.exit_code, kRunError);
  EXPECT_NE(streams.stderr_text.find(
                "p: error: standard output could not be written (No space "
                "left on device"),
            std::string::npos)
      << streams.stderr_text;
  // C stdio's own buffer, as printf-based benchmarks write.
  const ChildEnded stdio = RunChild(DevFull, [] {
    std::printf("a result\n");
    return 0;
  });
  EXPECT_EQ(stdio.exit_code, kRunError);
  EXPECT_NE(stdio.stderr_text.find("No space left on device"),
            std::string::npos)
      << stdio.stderr_text;
}

// `2>&-`: before, the next file the program opened took descriptor 2 and
// stderr's lines were written into it (a checkpoint folder's lock file).
TEST(StandardStreams, AClosedStderrIsNotTheNextFileOpened) {
  const std::string path = ::testing::TempDir() + "/opened_after_close";
  const ChildEnded e = testing::RunInChild(
      [] { ::close(2); },
      [&] {
        GuardStandardStreams();
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        std::cerr << "progress" << std::endl;
        std::fprintf(stderr, "a line\n");
        std::fflush(stderr);
        ::close(fd);
        return StandardStreamFailure() ==
                       "standard error could not be written (Bad file "
                       "descriptor: it was closed before the program started)"
                   ? 0
                   : 5;
      });
  EXPECT_EQ(e.exit_code, 0);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "");
}

TEST(StandardStreams, WhatWasWrittenArrivesAndAFailureIsKeptUntilTheEnd) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const ChildEnded e =
      RunChild([&] { ::dup2(out[1], 1); },
               [] {
                 std::cout << "one\n" << std::flush;
                 std::printf("two\n");
                 return StandardStreamFailure().empty() ? 0 : 5;
               });
  ::close(out[1]);
  std::string text;
  char buf[64];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof(buf))) > 0) text.append(buf, n);
  ::close(out[0]);
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_EQ(text, "one\ntwo\n");
}

}  // namespace
}  // namespace ringlet::cli
