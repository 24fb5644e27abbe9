// The arithmetic of the CUDA transport, on a stream: combine two device
// buffers into a third. Shape letters: n is the element count.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_CUDA_CUDA_KERNELS_H_
#define RINGLET_COLLECTIVES_TRANSPORT_CUDA_CUDA_KERNELS_H_

#include <cuda_runtime.h>

#include <cstddef>

#include "collectives/api/types.h"

namespace ringlet::collectives::cuda {

// dst[i] = op(a[i], b[i]) for i < n, enqueued on `stream`; for op avg the
// sum, divided by avg_divisor when above 0. dst may equal a. Returns the
// launch status (cudaGetLastError after the launch).
cudaError_t combine_forward(void* dst, const void* a, const void* b, size_t n,
                            DataType type, ReduceOp op, int avg_divisor,
                            cudaStream_t stream);

}  // namespace ringlet::collectives::cuda

#endif  // RINGLET_COLLECTIVES_TRANSPORT_CUDA_CUDA_KERNELS_H_
