// The host transport's bfloat16 arithmetic: each pair widened to float32,
// combined there and rounded once to nearest even, as Eigen::bfloat16
// rounds (NaN included: the vector and scalar paths agree bit for bit).
// AVX-512 or AVX2 where the CPU has them, detected at run time; SSE2
// otherwise.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_HOST_BF16_KERNELS_H_
#define RINGLET_COLLECTIVES_TRANSPORT_HOST_BF16_KERNELS_H_

#include <cstddef>

#include "collectives/api/types.h"

namespace ringlet::collectives::host {

// CombineInto (host_kernels.h) for bfloat16: op over float32, avg's
// division by avg_divisor (when above 0) in the same rounding.
void CombineBf16(void* dst, const void* a, const void* b, size_t count,
                 ReduceOp op, int avg_divisor, bool streaming);

// The vector bodies; each gives the same bits.
enum class Bf16Isa { kSse2, kAvx2, kAvx512 };
bool CpuHasBf16Isa(Bf16Isa isa);
// CombineBf16 through `isa`'s body (the widest this CPU has when it lacks
// `isa`): for tests, which check every body the CPU can run.
void CombineBf16Using(Bf16Isa isa, void* dst, const void* a, const void* b,
                      size_t count, ReduceOp op, int avg_divisor,
                      bool streaming);

// data[i] = round(data[i] / divisor).
void DivideBf16(void* data, size_t count, int divisor);

// "avx512f", "avx2" or "sse2": the instructions CombineBf16 uses on this
// CPU.
const char* Bf16KernelIsa();

}  // namespace ringlet::collectives::host

#endif  // RINGLET_COLLECTIVES_TRANSPORT_HOST_BF16_KERNELS_H_
