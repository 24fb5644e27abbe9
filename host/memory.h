// How much memory the host can still give this process, read where Linux
// keeps it: MemAvailable (/proc/meminfo) and the memory cgroup's limit
// less what the cgroup uses (cgroup v2's memory.max and memory.current, or
// v1's memory.limit_in_bytes and memory.usage_in_bytes, at every level up
// to the root; the page cache it could drop counts as free, as the
// kubelet counts it), and the address space ulimit -v leaves. Linux
// overcommits: an allocation past this succeeds and the process is killed
// later, when it touches the pages (exit 137, nothing printed). So whoever
// is about to allocate a size it read or was told (nn's host allocator,
// data's readers, the checkpoint reader, the benchmarks) asks first, and
// running out is one line naming the size instead.
//
// Tests (and anyone who wants a lower ceiling) set RINGLET_MEMINFO to a
// file in /proc/meminfo's format and RINGLET_MEMORY_CGROUP to a folder
// holding memory.max and memory.current; set, each replaces what it names.
#ifndef RINGLET_HOST_MEMORY_H_
#define RINGLET_HOST_MEMORY_H_

#include <cstdint>
#include <string>

namespace ringlet::host {

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

// The address space ulimit -v leaves this process (its limit less what is
// mapped now), or -1 when there is no limit; *limit (when given) says
// which: "the address space is limited to 2.00 GiB by ulimit -v".
int64_t AddressSpaceLeft(std::string* limit = nullptr);

// Of an address-space limit of `limit_bytes`, what is kept back for the
// libraries' own allocations (oneDNN's primitives and scratch, the C++
// runtime): 1/32 of it, from 32 MiB to 256 MiB. Without it ringlet's
// blocks could take the last byte, and a library whose malloc then fails
// may crash where it cannot say so (oneDNN's primitive creation did).
int64_t AddressSpaceReserve(int64_t limit_bytes);

// AddressSpaceLeft less AddressSpaceReserve: what ringlet's own
// allocations may take of it (at least 0), or -1 when there is no limit.
int64_t AddressSpaceForAllocations(std::string* limit = nullptr);

// What an allocation may take now: ReadHostMemory's, its reserve kept back
// and bounded by AddressSpaceForAllocations (`limit` then says so).
HostMemory FreeHostMemory();

// "" when `bytes` more fit in the host's memory (HostMemoryFits, and under
// ulimit -v); else why not, for an error message that names the bytes:
// "only 1008.00 MiB of the host's memory are free (the memory cgroup's
// limit of 1.00 GiB (/sys/fs/cgroup/job/memory.max))".
std::string HostMemoryShortfall(int64_t bytes);

// "1.20 GiB", "512 bytes": bytes as people read them.
std::string FormatBytes(int64_t bytes);

}  // namespace ringlet::host

#endif  // RINGLET_HOST_MEMORY_H_
