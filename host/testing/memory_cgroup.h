// For tests of code that asks host/memory.h: a host whose meminfo and
// cgroup files the test writes, and a child process inside a real memory
// cgroup, where the OOM killer would end what allocates past the limit.
#ifndef RINGLET_HOST_TESTING_MEMORY_CGROUP_H_
#define RINGLET_HOST_TESTING_MEMORY_CGROUP_H_

#include <cstdint>
#include <functional>
#include <string>

namespace ringlet::host::testing {

inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

// A meminfo file and a cgroup folder under `dir` in place of the
// machine's (RINGLET_MEMINFO, RINGLET_MEMORY_CGROUP), for the life of the
// object.
class FakeHost {
 public:
  explicit FakeHost(const std::string& dir);
  ~FakeHost();
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  void MemInfo(int64_t total, int64_t available);
  void Cgroup(const std::string& file, const std::string& value);
  std::string cgroup() const { return dir_ + "/cgroup"; }

 private:
  std::string dir_;
};

// Runs `body` in a child process inside a real memory cgroup (v1 or v2)
// limited to `limit` bytes. Returns the child's exit code, 128 + the signal
// that ended it (the OOM killer: 137), or -1 when this machine lets no
// cgroup be made here (not root, no writable cgroup tree): skip then.
int RunInCgroup(int64_t limit, const std::function<int()>& body);

}  // namespace ringlet::host::testing

#endif  // RINGLET_HOST_TESTING_MEMORY_CGROUP_H_
