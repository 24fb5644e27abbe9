#include "host/testing/memory_cgroup.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace ringlet::host::testing {

FakeHost::FakeHost(const std::string& dir) : dir_(dir) {
  ::mkdir(dir_.c_str(), 0755);
  ::mkdir((dir_ + "/cgroup").c_str(), 0755);
  ::setenv("RINGLET_MEMINFO", (dir_ + "/meminfo").c_str(), 1);
  ::setenv("RINGLET_MEMORY_CGROUP", (dir_ + "/cgroup").c_str(), 1);
}

FakeHost::~FakeHost() {
  ::unsetenv("RINGLET_MEMINFO");
  ::unsetenv("RINGLET_MEMORY_CGROUP");
}

void FakeHost::MemInfo(int64_t total, int64_t available) {
  std::ofstream(dir_ + "/meminfo")
      << "MemTotal:       " << total / 1024 << " kB\n"
      << "MemFree:        1000 kB\n"
      << "MemAvailable:   " << available / 1024 << " kB\n";
}

void FakeHost::Cgroup(const std::string& file, const std::string& value) {
  std::ofstream(dir_ + "/cgroup/" + file) << value << "\n";
}

int RunInCgroup(int64_t limit, const std::function<int()>& body) {
  std::string base;
  for (const std::string dir :
       {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    if (::access((dir + "/cgroup.procs").c_str(), W_OK) == 0) {
      base = dir;
      break;
    }
  }
  static int made_before = 0;
  const std::string group = base + "/ringlet_test_" +
                            std::to_string(::getpid()) + "_" +
                            std::to_string(made_before++);
  if (base.empty() || ::mkdir(group.c_str(), 0755) != 0) return -1;
  const bool v2 = ::access((group + "/memory.max").c_str(), F_OK) == 0;
  const std::string limit_file =
      group + (v2 ? "/memory.max" : "/memory.limit_in_bytes");
  const bool made =
      static_cast<bool>(std::ofstream(limit_file) << limit << "\n");
  if (v2) std::ofstream(group + "/memory.swap.max") << 0 << "\n";
  const pid_t child = made ? ::fork() : -1;
  if (child == 0) {
    std::ofstream(group + "/cgroup.procs") << ::getpid() << "\n";
    ::_exit(body());
  }
  int status = -1;
  if (child > 0) ::waitpid(child, &status, 0);
  ::rmdir(group.c_str());
  if (child < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ringlet::host::testing
