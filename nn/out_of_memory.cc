#include "nn/out_of_memory.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "host/memory.h"

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

}  // namespace

OutOfMemory::OutOfMemory(MemoryShortage shortage)
    : shortage_(std::move(shortage)), message_(Message(shortage_)) {}

MemoryShortage HostShortage(int64_t requested, int64_t held) {
  MemoryShortage s;
  s.where = "the host";
  s.requested = requested;
  s.held = held;
  const host::HostMemory free = host::FreeHostMemory();
  s.free = free.available;
  s.total = free.total;
  s.limit = free.limit;
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
