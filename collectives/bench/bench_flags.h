// Flag parsing shared by the allreduce benchmarks: sizes with K/M/G
// suffixes, and the list of sizes a sweep visits.
#ifndef RINGLET_COLLECTIVES_BENCH_BENCH_FLAGS_H_
#define RINGLET_COLLECTIVES_BENCH_BENCH_FLAGS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringlet::collectives {

// "4", "64K", "1M", "2G" (powers of 1024). Throws std::invalid_argument.
uint64_t ParseBytes(const std::string& text);

// What one rank of the benchmark allocates in host memory for a sweep up
// to `max_bytes`: a host copy to fill and check, the send and receive
// buffers where they are host memory (not `on_device`), and for the
// reproducible sum of host buffers its float64 word per element
// (`element_size` bytes each in the caller's type).
uint64_t BenchHostBytesPerRank(uint64_t max_bytes, size_t element_size,
                               bool on_device, bool reproducible);

// Throws std::invalid_argument, with the memory it would need and why
// it does not fit, when `ranks` ranks of `per_rank` bytes each pass what
// the host can give (host/memory.h's shortfall: its free memory, cgroup
// and ulimit -v; before, the bound counted two of three buffers against
// the machine's total, and the kernel killed the process). `shortfall` is
// host::HostMemoryShortfall's for the total, given here so tests can.
void CheckBenchMemory(const std::string& max_bytes_flag, uint64_t per_rank,
                      int ranks, const std::string& shortfall);

// min, min*factor, ... up to max, each rounded down to whole elements of
// `element_size` (at least one element).
std::vector<uint64_t> SweepSizes(uint64_t min_bytes, uint64_t max_bytes,
                                 double factor, size_t element_size);

// Calls per row: at least `iters`, more for small sizes so a row moves at
// least 1 GiB (at most 100,000 calls), but no more than fill
// kRowSecondsBudget at `seconds_per_call` (the slowest rank's first calls;
// 0: unknown), so many ranks oversubscribing few cores still finish a row
// in seconds. The caller makes it the same on every rank.
inline constexpr double kRowSecondsBudget = 0.5;
int CallsPerRow(uint64_t bytes, int iters, double seconds_per_call = 0);

// 2(n-1)/n: how busbw relates to algbw for allreduce (nccl-tests' factor).
double AllReduceBusFactor(int ranks);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BENCH_BENCH_FLAGS_H_
