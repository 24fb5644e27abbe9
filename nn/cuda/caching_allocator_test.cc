// The caching allocator's bookkeeping, over a counting malloc backend (the
// same code runs over cudaMalloc on GPUs).
#include "nn/cuda/caching_allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <stdexcept>

#include "nn/out_of_memory.h"

namespace ringlet::nn::cuda {
namespace {

// malloc with a budget, counting what is live, so exhaustion can be made.
struct CountingBackend {
  size_t budget = size_t{1} << 30;
  size_t live_bytes = 0;
  std::set<void*> live;
  std::map<void*, size_t> sizes;

  AllocatorBackend Make() {
    AllocatorBackend made;
    made.allocate = [this](size_t bytes) -> void* {
      if (live_bytes + bytes > budget) return nullptr;
      void* p = std::malloc(bytes);
      live.insert(p);
      sizes[p] = bytes;
      live_bytes += bytes;
      return p;
    };
    made.release = [this](void* p) {
      live_bytes -= sizes.at(p);
      sizes.erase(p);
      live.erase(p);
      std::free(p);
    };
    return made;
  }
};

TEST(CachingAllocator, RoundsToSizeClasses) {
  EXPECT_EQ(CachingAllocator::RoundSize(1), 512u);
  EXPECT_EQ(CachingAllocator::RoundSize(512), 512u);
  EXPECT_EQ(CachingAllocator::RoundSize(513), 1024u);
  EXPECT_EQ(CachingAllocator::RoundSize(1 << 20), 1u << 20);
  EXPECT_EQ(CachingAllocator::RoundSize((1 << 20) + 1), 2u << 20);
  EXPECT_EQ(CachingAllocator::RoundSize((5 << 20) + 7), 6u << 20);
}

TEST(CachingAllocator, ATrainingLoopStopsCallingTheBackendAfterOneStep) {
  CountingBackend backend;
  CachingAllocator allocator(backend.Make());
  const size_t sizes[] = {100, 4096, 3 << 20, 700, 4096};
  for (int step = 0; step < 10; ++step) {
    std::vector<void*> blocks;
    for (size_t s : sizes) blocks.push_back(allocator.Allocate(s));
    // Distinct blocks while all are in use.
    EXPECT_EQ(std::set<void*>(blocks.begin(), blocks.end()).size(), 5u);
    for (void* b : blocks) allocator.Free(b);
  }
  const AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.backend_allocations, 5u);
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_EQ(stats.cached_bytes, 512u + 4096 + (4u << 20) + 1024 + 4096);
  EXPECT_EQ(stats.peak_in_use_bytes, stats.cached_bytes);
}

// A benchmark's timed steps: the peak starts over from what is in use at
// the reset, not from zero, and grows again with what comes after.
TEST(CachingAllocator, ResetPeakStartsFromWhatIsInUse) {
  CountingBackend backend;
  CachingAllocator allocator(backend.Make());
  void* kept = allocator.Allocate(4096);
  void* big = allocator.Allocate(3 << 20);
  allocator.Free(big);
  EXPECT_EQ(allocator.stats().peak_in_use_bytes, 4096u + (4u << 20));
  allocator.ResetPeak();
  EXPECT_EQ(allocator.stats().peak_in_use_bytes, 4096u);
  void* small = allocator.Allocate(1000);
  allocator.Free(small);
  EXPECT_EQ(allocator.stats().peak_in_use_bytes, 4096u + 1024);
  allocator.Free(kept);
}

TEST(CachingAllocator, ReusesOnlyTheSameSizeClass) {
  CountingBackend backend;
  CachingAllocator allocator(backend.Make());
  void* small = allocator.Allocate(100);
  allocator.Free(small);
  void* large = allocator.Allocate(10000);
  EXPECT_NE(large, small);
  void* again = allocator.Allocate(300);  // Same 512-byte class.
  EXPECT_EQ(again, small);
  EXPECT_EQ(allocator.stats().backend_allocations, 2u);
  allocator.Free(again);
  allocator.Free(large);
}

TEST(CachingAllocator, ExhaustionEmptiesTheCacheThenRetries) {
  CountingBackend backend;
  backend.budget = 8 << 20;
  CachingAllocator allocator(backend.Make());
  allocator.Free(allocator.Allocate(6 << 20));  // Cached: 6 MiB.
  void* other = allocator.Allocate(4 << 20);    // Needs the cache back.
  EXPECT_NE(other, nullptr);
  EXPECT_EQ(allocator.stats().cached_bytes, 0u);
  EXPECT_THROW(allocator.Allocate(6 << 20), std::bad_alloc);
  allocator.Free(other);
}

// The error names the device, the request, what this allocator holds and
// what the device had free, so a trainer can say what batch would fit.
TEST(CachingAllocator, ExhaustionThrowsOutOfMemorySayingWhatWasFree) {
  CountingBackend backend;
  backend.budget = 8 << 20;
  AllocatorBackend made = backend.Make();
  made.where = "cuda:3";
  made.memory_info = [&backend](int64_t* free, int64_t* total) {
    *free = static_cast<int64_t>(backend.budget - backend.live_bytes);
    *total = static_cast<int64_t>(backend.budget);
  };
  CachingAllocator allocator(made);
  void* held = allocator.Allocate(6 << 20);
  try {
    allocator.Allocate(4 << 20);
    ADD_FAILURE() << "no error past the budget";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(e.shortage().where, "cuda:3");
    EXPECT_EQ(e.shortage().requested, 4 << 20);
    EXPECT_EQ(e.shortage().held, 6 << 20);
    EXPECT_EQ(e.shortage().free, 2 << 20);
    EXPECT_EQ(e.shortage().total, 8 << 20);
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr("cuda:3 is out of memory: asked for "
                                     "4.00 MiB with 2.00 MiB free of 8.00 "
                                     "MiB; this process held 6.00 MiB"));
  }
  allocator.Free(held);
  EXPECT_EQ(allocator.stats().in_use_bytes, 0u);
}

// Two replicas sharing a GPU have an allocator each: the error counts what
// both hold there (one replica's share would understate it by half), and
// blocks given back leave the count.
TEST(CachingAllocator, ExhaustionCountsEveryAllocatorOfTheDevice) {
  CountingBackend backend;
  backend.budget = 8 << 20;
  const auto held_on_device = std::make_shared<std::atomic<int64_t>>(0);
  AllocatorBackend made = backend.Make();
  made.held_on_device = held_on_device;
  CachingAllocator first(made), second(made);
  void* a = first.Allocate(3 << 20);
  void* b = second.Allocate(3 << 20);
  second.Free(b);  // Cached: still held.
  EXPECT_EQ(held_on_device->load(), 8 << 20);
  EXPECT_EQ(first.HeldBytes(), 8 << 20);
  try {
    first.Allocate(6 << 20);
    ADD_FAILURE() << "no error past the budget";
  } catch (const OutOfMemory& e) {
    // `first` gave its cache back (nothing); `second` still caches 4 MiB.
    EXPECT_EQ(e.shortage().held, 8 << 20);
  }
  second.EmptyCache();
  EXPECT_EQ(held_on_device->load(), 4 << 20);
  first.Free(a);
  first.EmptyCache();
  EXPECT_EQ(held_on_device->load(), 0);
}

// An injected failure leaves the books as they were: the next allocation
// works and nothing leaks.
TEST(CachingAllocator, AnInjectedFailureChangesNothing) {
  CountingBackend backend;
  CachingAllocator allocator(backend.Make());
  void* a = allocator.Allocate(1000);
  const AllocatorStats before = allocator.stats();
  InjectAllocationFailure(0);
  EXPECT_THROW(allocator.Allocate(1000), OutOfMemory);
  const AllocatorStats after = allocator.stats();
  EXPECT_EQ(after.in_use_bytes, before.in_use_bytes);
  EXPECT_EQ(after.backend_allocations, before.backend_allocations);
  void* b = allocator.Allocate(1000);
  EXPECT_NE(b, nullptr);
  allocator.Free(a);
  allocator.Free(b);
  EXPECT_EQ(allocator.stats().in_use_bytes, 0u);
}

TEST(CachingAllocator, ASizeNoMemoryHoldsIsOutOfMemoryNotAWrap) {
  CountingBackend backend;
  CachingAllocator allocator(backend.Make());
  EXPECT_THROW(allocator.Allocate(SIZE_MAX - 10), OutOfMemory);
  EXPECT_EQ(allocator.stats().in_use_bytes, 0u);
}

TEST(CachingAllocator, ForeignOrDoubleFreeIsAnError) {
  CountingBackend backend;
  CachingAllocator allocator(backend.Make());
  void* p = allocator.Allocate(64);
  allocator.Free(p);
  EXPECT_THROW(allocator.Free(p), std::invalid_argument);
  int local = 0;
  EXPECT_THROW(allocator.Free(&local), std::invalid_argument);
  allocator.Free(nullptr);  // Like free(nullptr).
  EXPECT_EQ(allocator.Allocate(0), nullptr);
}

TEST(CachingAllocator, EmptyCacheAndDestructionReturnEveryCachedBlock) {
  CountingBackend backend;
  {
    CachingAllocator allocator(backend.Make());
    allocator.Free(allocator.Allocate(1000));
    void* kept = allocator.Allocate(5000);
    EXPECT_EQ(backend.live.size(), 2u);
    allocator.EmptyCache();
    EXPECT_EQ(backend.live.size(), 1u);
    allocator.Free(kept);
  }
  EXPECT_TRUE(backend.live.empty());
}

// A captured graph's blocks (a pool) are handed out again only inside its
// pool, while the pool is open; eager work after the capture gets others,
// so a replay can never overwrite a tensor someone else holds.
TEST(CachingAllocator, APoolsBlocksStayItsOwnUntilItIsReleased) {
  CountingBackend backend;
  CachingAllocator allocator(backend.Make());
  void* before = allocator.Allocate(4096);
  allocator.Free(before);  // Cached in the shared cache.

  const int pool = allocator.BeginPool();
  EXPECT_NE(pool, 0);
  void* captured = allocator.Allocate(4096);
  EXPECT_EQ(captured, before);  // From the shared cache, now the pool's.
  allocator.Free(captured);
  EXPECT_EQ(allocator.Allocate(4096), captured);  // Reused inside the pool.
  allocator.Free(captured);
  allocator.EndPool();

  void* eager = allocator.Allocate(4096);
  EXPECT_NE(eager, captured);  // Not the graph's block.
  allocator.Free(eager);
  allocator.EmptyCache();  // Returns `eager`'s block, never the pool's.
  EXPECT_EQ(backend.live.count(captured), 1u);
  EXPECT_EQ(backend.live.count(eager), 0u);
  EXPECT_EQ(allocator.stats().cached_bytes, 4096u);  // The pool's block.

  allocator.ReleasePool(pool);
  EXPECT_EQ(allocator.Allocate(4096), captured);  // Shared again.
  allocator.Free(captured);
}

TEST(CachingAllocator, BlocksFreedWhileAPoolIsOpenJoinIt) {
  CountingBackend backend;
  CachingAllocator allocator(backend.Make());
  void* older = allocator.Allocate(1024);  // In use before the capture.
  const int pool = allocator.BeginPool();
  void* held = allocator.Allocate(2048);  // Still held when it ends.
  allocator.Free(older);                  // Freed during the capture.
  EXPECT_THROW(allocator.BeginPool(), std::logic_error);
  allocator.EndPool();

  allocator.Free(held);  // After the capture: back to its pool.
  void* a = allocator.Allocate(1024);
  void* b = allocator.Allocate(2048);
  EXPECT_NE(a, older);
  EXPECT_NE(b, held);
  allocator.Free(a);
  allocator.Free(b);

  allocator.ReleasePool(pool);
  allocator.EmptyCache();
  EXPECT_TRUE(backend.live.empty());
  EXPECT_EQ(allocator.stats().cached_bytes, 0u);
}

TEST(CachingAllocator, DestructionReturnsThePoolsBlocksToo) {
  CountingBackend backend;
  {
    CachingAllocator allocator(backend.Make());
    allocator.BeginPool();
    allocator.Free(allocator.Allocate(512));
    allocator.EndPool();
    EXPECT_EQ(backend.live.size(), 1u);
  }
  EXPECT_TRUE(backend.live.empty());
}

}  // namespace
}  // namespace ringlet::nn::cuda
