#include "cli/testing/child_process.h"

#include <sys/wait.h>
#include <unistd.h>

namespace ringlet::cli::testing {

ChildEnded RunInChild(const std::function<void()>& setup,
                      const std::function<int()>& body) {
  ChildEnded ended;
  int err[2];
  if (::pipe(err) != 0) return ended;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(err[0]);
    ::dup2(err[1], 2);
    if (setup) setup();
    ::_exit(body());
  }
  ::close(err[1]);
  char buf[512];
  ssize_t n;
  while ((n = ::read(err[0], buf, sizeof(buf))) > 0) {
    ended.stderr_text.append(buf, static_cast<size_t>(n));
  }
  ::close(err[0]);
  int status = 0;
  if (child > 0) ::waitpid(child, &status, 0);
  if (WIFEXITED(status)) ended.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) ended.signal = WTERMSIG(status);
  return ended;
}

}  // namespace ringlet::cli::testing
