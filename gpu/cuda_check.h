// The CUDA runtime's check macros: a failed call becomes a gpu::CudaError
// naming the file, the line, the call and the runtime's error string, e.g.
//   "nn/cuda/device_context.cc:41: cudaStreamCreate(&s): out of memory".
// RINGLET_CUDA_CHECK_LAUNCH() goes after every kernel launch, so a bad
// configuration shows up there and not at some later call.
// (nn/cuda/cuda_check.h adds the cuDNN and cuBLAS macros of the same shape.)
#ifndef RINGLET_GPU_CUDA_CHECK_H_
#define RINGLET_GPU_CUDA_CHECK_H_

#include <cuda_runtime.h>

#include <string>

#include "gpu/cuda_error.h"

#define RINGLET_CUDA_CHECK(call)                                          \
  do {                                                                    \
    const cudaError_t rc_ = (call);                                       \
    if (rc_ != cudaSuccess) {                                             \
      cudaGetLastError(); /* Clear it, so the next call starts clean. */  \
      ::ringlet::gpu::ThrowCudaError(__FILE__, __LINE__, #call,           \
                                     std::string(cudaGetErrorName(rc_)) + \
                                         ": " + cudaGetErrorString(rc_)); \
    }                                                                     \
  } while (0)

#define RINGLET_CUDA_CHECK_LAUNCH() RINGLET_CUDA_CHECK(cudaGetLastError())

#endif  // RINGLET_GPU_CUDA_CHECK_H_
