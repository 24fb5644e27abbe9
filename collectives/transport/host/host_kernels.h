// The arithmetic of the host transport: combine, copy and scale buffers.
//
// SSE2 loops (every x86-64 CPU has SSE2) with unaligned loads. With
// `streaming`, stores bypass the cache (non-temporal): for buffers far
// larger than the cache this saves the read-for-ownership of every written
// line, a third of the memory traffic of a combine. The caller must publish
// the result with a release store after the call; the kernels end with the
// store fence that non-temporal stores need.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_KERNELS_H_
#define RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_KERNELS_H_

#include <cstddef>

#include "collectives/api/types.h"

namespace ringlet::collectives::host {

// dst[i] = op(a[i], b[i]) for i < count. For op avg: the sum, divided by
// avg_divisor when it is above 0. dst may equal a or b.
void CombineInto(void* dst, const void* a, const void* b, size_t count,
                 DataType type, ReduceOp op, int avg_divisor, bool streaming);

// dst[0, bytes) = src[0, bytes); the ranges do not overlap.
void CopyInto(void* dst, const void* src, size_t bytes, bool streaming);

// data[i] /= divisor for i < count (integer division for int32).
void DivideInPlace(void* data, size_t count, DataType type, int divisor);

}  // namespace ringlet::collectives::host

#endif  // RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_KERNELS_H_
