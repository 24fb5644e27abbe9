#include "nn/out_of_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "nn/host_memory.h"

namespace ringlet::nn {
namespace {

std::atomic<int64_t> allocations{0};
// The allocation count at which one fails; -1: none.
std::atomic<int64_t> fail_at{-1};

std::string Message(const MemoryShortage& s) {
  std::string m =
      s.where + " is out of memory: asked for " +
      (s.asked_for.empty() ? FormatBytes(s.requested) : s.asked_for);
  if (s.free >= 0 && s.total > 0) {
    m += " with " + FormatBytes(s.free) + " free of " + FormatBytes(s.total);
  }
  m += "; this process held " + FormatBytes(s.held) + " there";
  if (!s.limit.empty()) m += " (" + s.limit + ")";
  return m;
}

// This process's address space in use (VmSize); -1 when unknown.
int64_t MappedBytes() {
  std::ifstream in("/proc/self/statm");
  int64_t pages = -1;
  if (!(in >> pages)) return -1;
  return pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

OutOfMemory::OutOfMemory(MemoryShortage shortage)
    : shortage_(std::move(shortage)), message_(Message(shortage_)) {}

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

MemoryShortage HostShortage(int64_t requested, int64_t held) {
  MemoryShortage s;
  s.where = "the host";
  s.requested = requested;
  s.held = held;
  const HostMemory memory = ReadHostMemory();
  // Free as the allocator counts it: with the reserve kept back.
  s.free =
      memory.available < 0
          ? -1
          : std::max<int64_t>(0, memory.available - HostMemoryReserve(memory));
  s.total = memory.total;
  s.limit = memory.limit;
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const int64_t cap = static_cast<int64_t>(limit.rlim_cur);
    // What the limit leaves, when less than the machine has free.
    const int64_t mapped = MappedBytes();
    if (mapped >= 0) {
      const int64_t left = std::max<int64_t>(0, cap - mapped);
      if (s.free < 0 || left < s.free) {
        s.free = left;
        s.limit = "the address space is limited to " + FormatBytes(cap) +
                  " by ulimit -v";
      }
    } else {
      s.limit = "the address space is limited to " + FormatBytes(cap) +
                " by ulimit -v";
    }
  }
  return s;
}

void InjectAllocationFailure(int64_t after) {
  fail_at.store(after < 0 ? -1 : allocations.load() + after);
}

bool TakeInjectedFailure() {
  const int64_t n = allocations.fetch_add(1);
  int64_t at = fail_at.load(std::memory_order_relaxed);
  if (at < 0 || n != at) return false;
  // Exactly one allocation takes it, even from several threads.
  return fail_at.compare_exchange_strong(at, -1);
}

int64_t AllocationsSoFar() { return allocations.load(); }

}  // namespace ringlet::nn
