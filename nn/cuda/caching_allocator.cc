#include "nn/cuda/caching_allocator.h"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>

#include "nn/out_of_memory.h"

namespace ringlet::nn::cuda {

CachingAllocator::CachingAllocator(AllocatorBackend backend)
    : backend_(std::move(backend)) {
  if (!backend_.allocate || !backend_.release) {
    throw std::invalid_argument("CachingAllocator needs allocate and release");
  }
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, pool] : pools_) free_blocks_.merge(pool);
  pools_.clear();
  EmptyCacheLocked();
}

size_t CachingAllocator::RoundSize(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20;
  constexpr size_t kSmallLimit = size_t{1} << 20;
  const size_t unit = bytes <= kSmallLimit ? kSmall : kLarge;
  return (bytes + unit - 1) / unit * unit;
}

namespace {

// Takes a block of class `size` from `list`, or null.
void* Take(std::multimap<size_t, void*>& list, size_t size) {
  const auto it = list.find(size);
  if (it == list.end()) return nullptr;
  void* block = it->second;
  list.erase(it);
  return block;
}

}  // namespace

int64_t CachingAllocator::HeldBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return HeldBytesLocked();
}

int64_t CachingAllocator::HeldBytesLocked() const {
  if (backend_.held_on_device) return backend_.held_on_device->load();
  return static_cast<int64_t>(stats_.in_use_bytes + stats_.cached_bytes);
}

void CachingAllocator::ThrowOutOfMemory(size_t bytes) const {
  MemoryShortage s;
  s.where = backend_.where;
  s.requested = static_cast<int64_t>(bytes);
  s.held = HeldBytesLocked();
  if (backend_.memory_info) backend_.memory_info(&s.free, &s.total);
  throw OutOfMemory(s);
}

void* CachingAllocator::Allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  // Past this, rounding up to a size class would wrap around.
  if (TakeInjectedFailure() || bytes > SIZE_MAX / 2) ThrowOutOfMemory(bytes);
  const size_t size = RoundSize(bytes);
  void* block = open_pool_ != 0 ? Take(pools_[open_pool_], size) : nullptr;
  if (block == nullptr) block = Take(free_blocks_, size);
  if (block != nullptr) {
    stats_.cached_bytes -= size;
  } else {
    block = backend_.allocate(size);
    if (block == nullptr) {
      // Blocks of other sizes may be what stands in the way.
      EmptyCacheLocked();
      block = backend_.allocate(size);
      if (block == nullptr) ThrowOutOfMemory(size);
    }
    ++stats_.backend_allocations;
    if (backend_.held_on_device) *backend_.held_on_device += size;
  }
  in_use_.emplace(block, InUse{size, open_pool_});
  stats_.in_use_bytes += size;
  stats_.peak_in_use_bytes =
      std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  return block;
}

void CachingAllocator::Free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = in_use_.find(ptr);
  if (it == in_use_.end()) {
    throw std::invalid_argument(
        "CachingAllocator::Free: a pointer this allocator did not hand out, "
        "or one freed twice");
  }
  const InUse block = it->second;
  in_use_.erase(it);
  stats_.in_use_bytes -= block.size;
  stats_.cached_bytes += block.size;
  const int pool = open_pool_ != 0 ? open_pool_ : block.pool;
  const auto owner = pools_.find(pool);
  (owner != pools_.end() ? owner->second : free_blocks_)
      .emplace(block.size, ptr);
}

int CachingAllocator::BeginPool() {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_pool_ != 0) {
    throw std::logic_error(
        "CachingAllocator::BeginPool: pool " + std::to_string(open_pool_) +
        " is still open (one capture at a time per allocator)");
  }
  open_pool_ = next_pool_++;
  pools_[open_pool_];
  return open_pool_;
}

void CachingAllocator::EndPool() {
  std::lock_guard<std::mutex> lock(mu_);
  open_pool_ = 0;
}

void CachingAllocator::ReleasePool(int pool) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pool == open_pool_) open_pool_ = 0;
  const auto it = pools_.find(pool);
  if (it == pools_.end()) return;
  free_blocks_.merge(it->second);
  pools_.erase(it);
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mu_);
  EmptyCacheLocked();
}

void CachingAllocator::EmptyCacheLocked() {
  for (const auto& [size, block] : free_blocks_) {
    backend_.release(block);
    stats_.cached_bytes -= size;
    if (backend_.held_on_device) *backend_.held_on_device -= size;
  }
  free_blocks_.clear();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::ResetPeak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_in_use_bytes = stats_.in_use_bytes;
}

}  // namespace ringlet::nn::cuda
