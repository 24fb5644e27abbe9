#include "host/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace ringlet::host {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : fallback;
}

// A "Name:   123 kB" line of a meminfo file, in bytes; -1 when missing.
int64_t MemInfoBytes(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, name.size() + 1, name + ":") != 0) continue;
    std::istringstream fields(line.substr(name.size() + 1));
    int64_t kib = -1;
    fields >> kib;
    return kib < 0 ? -1 : kib * 1024;
  }
  return -1;
}

// A file holding one number of bytes ("max", a v1 "unlimited" near 2^63,
// or a missing file: -1).
int64_t BytesIn(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < 0) return -1;
  if (v >= (int64_t{1} << 62)) return -1;  // v1's "no limit".
  return v;
}

// The value of `key` in a memory.stat file; 0 when missing.
int64_t StatBytes(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string name;
  int64_t value = 0;
  while (in >> name >> value) {
    if (name == key) return value;
  }
  return 0;
}

struct CgroupLevel {
  std::string dir;
  bool v2 = true;
};

// This process's memory cgroup folders, innermost first.
std::vector<CgroupLevel> CgroupLevels() {
  const char* forced = std::getenv("RINGLET_MEMORY_CGROUP");
  if (forced != nullptr && forced[0] != '\0') {
    const std::string dir = forced;
    return {{dir, std::ifstream(dir + "/memory.max").good()}};
  }
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1_path, v2_path;
  bool has_v2 = false;
  while (std::getline(in, line)) {
    // "hierarchy-id:controllers:path"
    const size_t a = line.find(':');
    const size_t b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {
      v2_path = path;
      has_v2 = true;
    }
    std::istringstream names(controllers);
    for (std::string c; std::getline(names, c, ',');) {
      if (c == "memory") v1_path = path;
    }
  }
  std::vector<CgroupLevel> levels;
  auto walk_up = [&](const std::string& root, std::string path, bool v2) {
    while (true) {
      levels.push_back({root + (path == "/" ? "" : path), v2});
      if (path == "/" || path.empty()) break;
      const size_t slash = path.rfind('/');
      path = slash == 0 ? "/" : path.substr(0, slash);
    }
  };
  if (!v1_path.empty()) {
    walk_up("/sys/fs/cgroup/memory", v1_path, false);
  } else if (has_v2) {
    for (const std::string root :
         {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
      if (std::ifstream(root + "/cgroup.controllers").good()) {
        walk_up(root, v2_path, true);
        break;
      }
    }
  }
  return levels;
}

}  // namespace

HostMemory ReadHostMemory() {
  HostMemory m;
  const std::string meminfo = EnvOr("RINGLET_MEMINFO", "/proc/meminfo");
  m.available = MemInfoBytes(meminfo, "MemAvailable");
  m.total = MemInfoBytes(meminfo, "MemTotal");
  for (const CgroupLevel& level : CgroupLevels()) {
    const std::string max_file =
        level.dir + (level.v2 ? "/memory.max" : "/memory.limit_in_bytes");
    const int64_t limit = BytesIn(max_file);
    if (limit < 0) continue;
    const int64_t used = BytesIn(
        level.dir + (level.v2 ? "/memory.current" : "/memory.usage_in_bytes"));
    const int64_t reclaimable =
        StatBytes(level.dir + "/memory.stat",
                  level.v2 ? "inactive_file" : "total_inactive_file");
    const int64_t left =
        std::max<int64_t>(0, limit - std::max<int64_t>(0, used - reclaimable));
    if (m.available < 0 || left < m.available) {
      m.available = left;
      m.limit = "the memory cgroup's limit of " + FormatBytes(limit) + " (" +
                max_file + ")";
    }
    if (m.total < 0 || limit < m.total) m.total = limit;
  }
  return m;
}

int64_t HostMemoryReserve(const HostMemory& memory) {
  return memory.total > 0
             ? std::min<int64_t>(memory.total / 64, int64_t{256} << 20)
             : 0;
}

bool HostMemoryFits(const HostMemory& memory, int64_t bytes) {
  if (memory.available < 0) return true;  // Unknown: the allocator decides.
  return bytes <= memory.available - HostMemoryReserve(memory);
}

int64_t AddressSpaceLeft(std::string* limit) {
  rlimit cap{};
  if (getrlimit(RLIMIT_AS, &cap) != 0 || cap.rlim_cur == RLIM_INFINITY) {
    return -1;
  }
  const int64_t bytes = static_cast<int64_t>(cap.rlim_cur);
  if (limit != nullptr) {
    *limit = "the address space is limited to " + FormatBytes(bytes) +
             " by ulimit -v";
  }
  // VmSize: what this process has mapped now.
  std::ifstream in("/proc/self/statm");
  int64_t pages = -1;
  if (!(in >> pages)) return bytes;
  return std::max<int64_t>(0, bytes - pages * sysconf(_SC_PAGESIZE));
}

int64_t AddressSpaceReserve(int64_t limit_bytes) {
  return std::clamp<int64_t>(limit_bytes / 32, int64_t{32} << 20,
                             int64_t{256} << 20);
}

int64_t AddressSpaceForAllocations(std::string* limit) {
  const int64_t left = AddressSpaceLeft(limit);
  if (left < 0) return -1;
  rlimit cap{};
  getrlimit(RLIMIT_AS, &cap);
  return std::max<int64_t>(
      0, left - AddressSpaceReserve(static_cast<int64_t>(cap.rlim_cur)));
}

HostMemory FreeHostMemory() {
  HostMemory memory = ReadHostMemory();
  if (memory.available >= 0) {
    memory.available =
        std::max<int64_t>(0, memory.available - HostMemoryReserve(memory));
  }
  std::string address_limit;
  const int64_t address_left = AddressSpaceForAllocations(&address_limit);
  if (address_left >= 0 &&
      (memory.available < 0 || address_left < memory.available)) {
    memory.available = address_left;
    memory.limit = address_limit;
  }
  return memory;
}

std::string HostMemoryShortfall(int64_t bytes) {
  const HostMemory free = FreeHostMemory();
  if (free.available < 0 || bytes <= free.available) return "";
  return "only " + FormatBytes(free.available) + " of the host's memory " +
         (free.available == 1 ? "is" : "are") + " free" +
         (free.limit.empty() ? "" : " (" + free.limit + ")");
}

std::string FormatBytes(int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) {
    std::snprintf(buf, sizeof(buf), "%" PRId64 " bytes", bytes);
  } else if (b < 1024.0 * 1024) {
    std::snprintf(buf, sizeof(buf), "%.2f KiB", b / 1024);
  } else if (b < 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof(buf), "%.2f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / (1024.0 * 1024 * 1024));
  }
  return buf;
}

}  // namespace ringlet::host
