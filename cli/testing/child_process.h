// For tests of what ends a process (signals, closed streams, exit codes):
// runs a function in a forked child whose stderr the test reads.
#ifndef RINGLET_CLI_TESTING_CHILD_PROCESS_H_
#define RINGLET_CLI_TESTING_CHILD_PROCESS_H_

#include <functional>
#include <string>

namespace ringlet::cli::testing {

struct ChildEnded {
  int exit_code = -1;  // -1 when a signal ended it.
  int signal = 0;      // The signal that ended it; 0 when it exited.
  std::string stderr_text;
};

// Forks; the child points its stderr at a pipe, runs `setup` (redirects,
// say), then exits with body()'s value. Returns once the child has ended.
ChildEnded RunInChild(const std::function<void()>& setup,
                      const std::function<int()>& body);

}  // namespace ringlet::cli::testing

#endif  // RINGLET_CLI_TESTING_CHILD_PROCESS_H_
