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

// Throws std::invalid_argument, with the memory it would need, when a sweep
// up to `max_bytes` on `ranks` ranks would not fit in `memory_bytes` (a raw
// std::bad_alloc once ended --min_bytes=64G).
void CheckBenchMemory(uint64_t max_bytes, int ranks, uint64_t memory_bytes);
// This machine's physical memory.
uint64_t PhysicalMemoryBytes();

// min, min*factor, ... up to max, each rounded down to whole elements of
// `element_size` (at least one element).
std::vector<uint64_t> SweepSizes(uint64_t min_bytes, uint64_t max_bytes,
                                 double factor, size_t element_size);

// Calls per row: at least `iters`, more for small sizes so a row moves at
// least 1 GiB (at most 100,000 calls); the same on every rank.
int CallsPerRow(uint64_t bytes, int iters);

// 2(n-1)/n: how busbw relates to algbw for allreduce (nccl-tests' factor).
double AllReduceBusFactor(int ranks);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BENCH_BENCH_FLAGS_H_
