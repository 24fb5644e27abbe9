// A caching block allocator: freed blocks are kept and handed out again for
// requests of the same size class, so a training loop, which asks for the
// same sizes every step, stops calling the backend (cudaMalloc, which
// synchronises the device) after its first step. Like PyTorch's CUDA caching
// allocator, simplified: sizes are rounded to classes and blocks are never
// split or merged.
//
// Plain C++ with the backend passed in, so the caching is tested on any
// machine (with malloc); nn/cuda/device_context gives each GPU one over
// cudaMalloc/cudaFree. A block freed while kernels still use it is safe to
// reuse when all work on the device runs on one stream, as nn's does:
// stream order puts the new user after the old one.
#ifndef RINGLET_NN_CUDA_CACHING_ALLOCATOR_H_
#define RINGLET_NN_CUDA_CACHING_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace ringlet::nn::cuda {

struct AllocatorBackend {
  // Returns null when memory is exhausted.
  std::function<void*(size_t bytes)> allocate;
  std::function<void(void* ptr)> release;
  // For the OutOfMemory error: the device's name, and (optional) its free
  // and total bytes at the time.
  std::string where = "device";
  std::function<void(int64_t* free, int64_t* total)> memory_info;
  // Bytes every allocator of the device in this process holds from its
  // backend (in use and cached), shared by them: replicas sharing a GPU
  // each have an allocator, and the error counts them all. Null: this
  // allocator's alone.
  std::shared_ptr<std::atomic<int64_t>> held_on_device;
};

struct AllocatorStats {
  size_t backend_allocations = 0;  // Calls to backend.allocate that worked.
  size_t in_use_bytes = 0;         // Handed out and not freed (rounded).
  size_t cached_bytes = 0;         // Freed and kept for reuse.
  size_t peak_in_use_bytes = 0;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(AllocatorBackend backend);
  // Returns every cached block to the backend. Blocks still in use are
  // left alone (their owners outlive the allocator only at exit).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (null for 0). On exhaustion the cache is
  // emptied and the backend asked once more; then throws OutOfMemory
  // (nn/out_of_memory.h) naming the device, the bytes asked for, those this
  // allocator holds and those free. An injected failure throws it too.
  void* Allocate(size_t bytes);
  // Gives a block back for reuse. Throws std::invalid_argument for a
  // pointer this allocator did not hand out (or freed twice).
  void Free(void* ptr);
  // Returns every cached block to the backend (not those of live pools).
  void EmptyCache();
  AllocatorStats stats() const;
  // What the OutOfMemory error reports as held: the device's allocators'
  // bytes (held_on_device), else this allocator's in use and cached.
  int64_t HeldBytes() const;
  // Starts peak_in_use_bytes over from what is in use now (a benchmark's
  // timed steps, after the warm-up steps).
  void ResetPeak();

  // Pools for captured CUDA graphs, which replay on the addresses they were
  // captured with: no one else may be handed those while the graph lives.
  // Between BeginPool() and EndPool() every block handed out or freed joins
  // the new pool (a block from before, freed then, may have been read by
  // the captured work); a pool's freed blocks are handed out again only
  // while it is open, never go back to the backend while it lives, and
  // return to the shared cache at ReleasePool (its blocks still in use do
  // when freed). One pool is open at a time; BeginPool throws
  // std::logic_error otherwise. Ids are never 0.
  int BeginPool();
  void EndPool();
  void ReleasePool(int pool);

  // The size class of a request: multiples of 512 bytes up to 1 MiB, of
  // 2 MiB above.
  static size_t RoundSize(size_t bytes);

 private:
  void EmptyCacheLocked();
  int64_t HeldBytesLocked() const;
  [[noreturn]] void ThrowOutOfMemory(size_t bytes) const;

  struct InUse {
    size_t size;  // Size class.
    int pool;     // 0: the shared cache.
  };
  using FreeList = std::multimap<size_t, void*>;  // Size class -> block.

  AllocatorBackend backend_;
  mutable std::mutex mu_;
  FreeList free_blocks_;  // The shared cache.
  std::unordered_map<void*, InUse> in_use_;
  std::map<int, FreeList> pools_;  // Live pools' freed blocks.
  int open_pool_ = 0;
  int next_pool_ = 1;
  AllocatorStats stats_;
};

}  // namespace ringlet::nn::cuda

#endif  // RINGLET_NN_CUDA_CACHING_ALLOCATOR_H_
