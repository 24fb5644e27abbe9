// Large host blocks for CPU tensors, kept for reuse when freed. A training
// step allocates the same activation sizes every time; glibc serves blocks
// over 32 MiB (ResNet-18's first stage at batch 256: 51 MiB) from fresh
// mmaps, so each step paid a page fault and a zeroed page per 4 KiB (10% of
// a ResNet-18 step in the kernel). Blocks here are 64-byte aligned.
#ifndef RINGLET_NN_HOST_BLOCK_CACHE_H_
#define RINGLET_NN_HOST_BLOCK_CACHE_H_

#include <cstddef>
#include <cstdint>

namespace ringlet::nn {

// Blocks below this go straight to operator new and back.
constexpr size_t kHostBlockCacheMinBytes = 1 << 20;

struct HostBlock {
  void* data;
  size_t capacity;  // bytes, at least those asked for
};
// A block of at least `bytes`, 64-byte aligned: the smallest cached block
// that fits and is less than twice the size, else a new one. Throws
// OutOfMemory (nn/out_of_memory.h) saying how much the host has free.
HostBlock AllocateHostBlock(size_t bytes);
// Takes back a block from AllocateHostBlock.
void FreeHostBlock(const HostBlock& block);

struct HostBlockCacheStats {
  int64_t cached_bytes = 0;  // free, kept for reuse
  int64_t hits = 0, misses = 0;
};
HostBlockCacheStats GetHostBlockCacheStats();
// Gives every cached block back to the system.
void ReleaseHostBlockCache();

}  // namespace ringlet::nn

#endif  // RINGLET_NN_HOST_BLOCK_CACHE_H_
