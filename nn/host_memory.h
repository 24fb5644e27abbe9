// How much memory the host can still give this process, read where Linux
// keeps it: MemAvailable (/proc/meminfo) and the memory cgroup's limit
// less what the cgroup uses (cgroup v2's memory.max and memory.current, or
// v1's memory.limit_in_bytes and memory.usage_in_bytes, at every level up
// to the root; the page cache it could drop counts as free, as the
// kubelet counts it). Linux overcommits: an allocation past this succeeds
// and the process is killed later, when it touches the pages (exit 137,
// nothing printed). nn's host allocator asks first (host_block_cache.cc),
// so running out is OutOfMemory's one line instead.
//
// Tests (and anyone who wants a lower ceiling) set RINGLET_MEMINFO to a
// file in /proc/meminfo's format and RINGLET_MEMORY_CGROUP to a folder
// holding memory.max and memory.current; set, each replaces what it names.
#ifndef RINGLET_NN_HOST_MEMORY_H_
#define RINGLET_NN_HOST_MEMORY_H_

#include <cstdint>
#include <string>

namespace ringlet::nn {

struct HostMemory {
  int64_t available = -1;  // Bytes; -1 when unknown.
  int64_t total = -1;      // MemTotal, or the cgroup's limit when lower.
  // Set when the cgroup leaves less than MemAvailable: "the memory
  // cgroup's limit of 2.00 GiB (/sys/fs/cgroup/job/memory.max)".
  std::string limit;
};

HostMemory ReadHostMemory();

// Allocations of at least this many bytes are checked against
// ReadHostMemory() first (a few small file reads), and smaller ones each
// time this many bytes of them have been allocated since the last read.
inline constexpr int64_t kCheckedHostAllocation = int64_t{1} << 20;
inline constexpr int64_t kRereadAfterBytes = int64_t{16} << 20;

// What is kept back for the rest of the process and the kernel: 1/64 of
// the total, at most 256 MiB.
int64_t HostMemoryReserve(const HostMemory& memory);

// True when `bytes` more fit in `memory`, the reserve kept.
bool HostMemoryFits(const HostMemory& memory, int64_t bytes);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_HOST_MEMORY_H_
