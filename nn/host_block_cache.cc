#include "nn/host_block_cache.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "host/memory.h"
#include "nn/out_of_memory.h"

namespace ringlet::nn {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kPage = 4096;
// Free blocks beyond this are given back: a bound for programs whose sizes
// keep changing (training repeats its sizes and stays far below).
constexpr int64_t kMaxCachedBytes = int64_t{4} << 30;

size_t Rounded(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

// Bytes of blocks handed out and not freed (what an OutOfMemory reports).
std::atomic<int64_t> held_bytes{0};

[[noreturn]] void ThrowOutOfMemory(size_t bytes) {
  throw OutOfMemory(
      HostShortage(static_cast<int64_t>(bytes), held_bytes.load()));
}

struct Cache {
  std::mutex mutex;
  std::multimap<size_t, void*> free_blocks;  // rounded size -> block
  HostBlockCacheStats stats;
};

Cache& TheCache() {
  // Never destroyed: tensors in static storage may be freed after it.
  static Cache* cache = new Cache();
  return *cache;
}

// Bytes newly allocated since the host's memory was last read.
std::atomic<int64_t> unread_bytes{0};

// Linux would hand out more than there is and kill the process when the
// pages are touched: what the host (and its cgroup) can give is asked
// before each large allocation, and after every kRereadAfterBytes of small
// ones (many replicas are many small tensors), so what grows unseen
// between two reads stays below the reserve.
void CheckHostMemoryFor(size_t bytes) {
  const int64_t b = static_cast<int64_t>(bytes);
  // Under ulimit -v a large block leaves the libraries their reserve
  // (host::AddressSpaceReserve): the shortage is ours to report, not a
  // library's malloc to fail.
  if (b >= host::kCheckedHostAllocation) {
    const int64_t room = host::AddressSpaceForAllocations();
    if (room >= 0 && b > room) ThrowOutOfMemory(bytes);
  }
  const int64_t unread = unread_bytes.fetch_add(b) + b;
  if (b < host::kCheckedHostAllocation && unread < host::kRereadAfterBytes) {
    return;
  }
  unread_bytes.store(0);
  if (!host::HostMemoryFits(host::ReadHostMemory(), unread)) {
    ThrowOutOfMemory(bytes);
  }
}

// Large blocks are checked, allocated and touched one at a time: a block
// is in the kernel's count (MemAvailable, the cgroup's usage) before the
// next is checked, so replicas allocating at once cannot all pass the
// check against the same free memory and overshoot it together.
std::mutex& LargeAllocationMutex() {
  static std::mutex* mutex = new std::mutex();
  return *mutex;
}

void* SystemAllocate(size_t rounded) {
  std::lock_guard<std::mutex> lock(LargeAllocationMutex());
  CheckHostMemoryFor(rounded);
  void* block = std::aligned_alloc(kAlignment, rounded);
  if (block == nullptr) ThrowOutOfMemory(rounded);
  // One write a page commits it (the op that fills it would fault the same
  // pages a moment later).
  volatile char* bytes = static_cast<volatile char*>(block);
  for (size_t at = 0; at < rounded; at += kPage) bytes[at] = 0;
  return block;
}

HostBlock AllocateUncounted(size_t bytes) {
  if (TakeInjectedFailure()) ThrowOutOfMemory(bytes);
  if (bytes < kHostBlockCacheMinBytes) {
    CheckHostMemoryFor(bytes);
    void* block =
        ::operator new(bytes, std::align_val_t(kAlignment), std::nothrow);
    if (block == nullptr) ThrowOutOfMemory(bytes);
    return {block, bytes};
  }
  // Past this, rounding up to a page would wrap around.
  if (bytes > SIZE_MAX - kPage) ThrowOutOfMemory(bytes);
  const size_t rounded = Rounded(bytes);
  Cache& cache = TheCache();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    // The smallest free block that fits, if it wastes less than half.
    auto it = cache.free_blocks.lower_bound(rounded);
    if (it != cache.free_blocks.end() && it->first <= 2 * rounded) {
      const HostBlock block{it->second, it->first};
      cache.stats.cached_bytes -= it->first;
      cache.free_blocks.erase(it);
      ++cache.stats.hits;
      return block;
    }
    ++cache.stats.misses;
  }
  return {SystemAllocate(rounded), rounded};
}

}  // namespace

HostBlock AllocateHostBlock(size_t bytes) {
  const HostBlock block = AllocateUncounted(bytes);
  held_bytes.fetch_add(static_cast<int64_t>(block.capacity));
  return block;
}

void FreeHostBlock(const HostBlock& block) {
  if (block.data == nullptr) return;
  held_bytes.fetch_sub(static_cast<int64_t>(block.capacity));
  if (block.capacity < kHostBlockCacheMinBytes) {
    ::operator delete(block.data, std::align_val_t(kAlignment));
    return;
  }
  const size_t rounded = block.capacity;
  Cache& cache = TheCache();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (cache.stats.cached_bytes + static_cast<int64_t>(rounded) <=
        kMaxCachedBytes) {
      cache.free_blocks.emplace(rounded, block.data);
      cache.stats.cached_bytes += rounded;
      return;
    }
  }
  std::free(block.data);
}

HostBlockCacheStats GetHostBlockCacheStats() {
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.stats;
}

void ReleaseHostBlockCache() {
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  for (auto& [size, block] : cache.free_blocks) std::free(block);
  cache.free_blocks.clear();
  cache.stats.cached_bytes = 0;
}

}  // namespace ringlet::nn
