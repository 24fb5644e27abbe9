// Memory running out, as an error a user can act on: OutOfMemory is a
// std::bad_alloc (code that catches that still does) that says where, how
// many bytes were asked for, how many this process held there and how many
// were free: "cuda:0 is out of memory: asked for 4.48 GiB with 1.20 GiB
// free of 79.19 GiB; this process held 70.11 GiB there".
//
// Every allocator of nn throws it (host tensors, each GPU's caching
// allocator), and each can be made to fail on purpose for tests, at any
// allocation from now (InjectAllocationFailure), so the failure path of
// every allocation site is exercised on any machine.
#ifndef RINGLET_NN_OUT_OF_MEMORY_H_
#define RINGLET_NN_OUT_OF_MEMORY_H_

#include <cstdint>
#include <new>
#include <string>

#include "host/memory.h"

namespace ringlet::nn {

// What an allocator knows when it fails; free and total are -1 when
// unknown.
struct MemoryShortage {
  std::string where;      // "cuda:0", "the host".
  int64_t requested = 0;  // Bytes of the allocation that failed.
  // What was asked for, where a library allocated and did not say how
  // much ("a cuBLAS handle"); the message names it instead of the bytes.
  std::string asked_for;
  int64_t held = 0;  // Bytes this process held there (all its allocators).
  // Bytes free on the device (the host: MemAvailable or what its memory
  // cgroup leaves, less a reserve (host_memory.h), or what ulimit -v
  // leaves if less).
  int64_t free = -1;
  int64_t total = -1;  // The device's memory.
  std::string limit;   // Why less fits than is free: "ulimit -v ...".
};

class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(MemoryShortage shortage);
  const char* what() const noexcept override { return message_.c_str(); }
  const MemoryShortage& shortage() const { return shortage_; }

 private:
  MemoryShortage shortage_;
  std::string message_;
};

// "1.20 GiB", "512 bytes": bytes as people read them.
using host::FormatBytes;

// The host's side of a shortage: free and total from /proc/meminfo, and
// the address-space limit (ulimit -v) when one is set, with what it leaves.
MemoryShortage HostShortage(int64_t requested, int64_t held);

// For tests: the allocation `after` allocations from now (0: the next one)
// fails with OutOfMemory, once, in whichever allocator of nn it happens
// (host tensors, GPU caching allocators). Negative: none fails.
void InjectAllocationFailure(int64_t after);
// Called by each allocator before it allocates: true when this allocation
// must fail. Also counts allocations (AllocationsSoFar).
bool TakeInjectedFailure();
// Allocations nn's allocators made so far (what a test injects between).
int64_t AllocationsSoFar();

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OUT_OF_MEMORY_H_
