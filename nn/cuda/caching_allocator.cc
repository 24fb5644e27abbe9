#include "nn/cuda/caching_allocator.h"

#include <algorithm>
#include <new>
#include <stdexcept>

namespace ringlet::nn::cuda {

CachingAllocator::CachingAllocator(AllocatorBackend backend)
    : backend_(std::move(backend)) {
  if (!backend_.allocate || !backend_.release) {
    throw std::invalid_argument("CachingAllocator needs allocate and release");
  }
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  EmptyCacheLocked();
}

size_t CachingAllocator::RoundSize(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20;
  constexpr size_t kSmallLimit = size_t{1} << 20;
  const size_t unit = bytes <= kSmallLimit ? kSmall : kLarge;
  return (bytes + unit - 1) / unit * unit;
}

void* CachingAllocator::Allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t size = RoundSize(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  void* block = nullptr;
  const auto cached = free_blocks_.find(size);
  if (cached != free_blocks_.end()) {
    block = cached->second;
    free_blocks_.erase(cached);
    stats_.cached_bytes -= size;
  } else {
    block = backend_.allocate(size);
    if (block == nullptr) {
      // Blocks of other sizes may be what stands in the way.
      EmptyCacheLocked();
      block = backend_.allocate(size);
      if (block == nullptr) throw std::bad_alloc();
    }
    ++stats_.backend_allocations;
  }
  in_use_.emplace(block, size);
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
  const size_t size = it->second;
  in_use_.erase(it);
  stats_.in_use_bytes -= size;
  stats_.cached_bytes += size;
  free_blocks_.emplace(size, ptr);
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mu_);
  EmptyCacheLocked();
}

void CachingAllocator::EmptyCacheLocked() {
  for (const auto& [size, block] : free_blocks_) backend_.release(block);
  free_blocks_.clear();
  stats_.cached_bytes = 0;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace ringlet::nn::cuda
