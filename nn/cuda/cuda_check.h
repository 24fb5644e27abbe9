// One check macro per CUDA library: each turns a failed call into an
// nn::DeviceError naming the file, the line, the call and the library's own
// error string, e.g.
//   "nn/cuda/device_context.cc:41: cudaStreamCreate(&s): out of memory".
// RINGLET_CUDA_CHECK_LAUNCH() goes after every kernel launch.
#ifndef RINGLET_NN_CUDA_CUDA_CHECK_H_
#define RINGLET_NN_CUDA_CUDA_CHECK_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

#include "nn/cuda/cublas_library.h"
#include "nn/device.h"

namespace ringlet::nn::cuda {

[[noreturn]] inline void ThrowCudaFailure(const char* file, int line,
                                          const char* call,
                                          const std::string& what) {
  throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": " +
                    call + ": " + what);
}

// Through the loaded library (cublas_library.h): nn does not link cuBLAS.
inline std::string CublasErrorString(cublasStatus_t status) {
  return Cublas().status_string(status);
}

}  // namespace ringlet::nn::cuda

#define RINGLET_CUDA_CHECK(call)                                       \
  do {                                                                 \
    const cudaError_t rc_ = (call);                                    \
    if (rc_ != cudaSuccess) {                                          \
      ::ringlet::nn::cuda::ThrowCudaFailure(__FILE__, __LINE__, #call, \
                                            cudaGetErrorString(rc_));  \
    }                                                                  \
  } while (0)

#define RINGLET_CUDNN_CHECK(call)                                      \
  do {                                                                 \
    const cudnnStatus_t rc_ = (call);                                  \
    if (rc_ != CUDNN_STATUS_SUCCESS) {                                 \
      ::ringlet::nn::cuda::ThrowCudaFailure(__FILE__, __LINE__, #call, \
                                            cudnnGetErrorString(rc_)); \
    }                                                                  \
  } while (0)

#define RINGLET_CUBLAS_CHECK(call)                      \
  do {                                                  \
    const cublasStatus_t rc_ = (call);                  \
    if (rc_ != CUBLAS_STATUS_SUCCESS) {                 \
      ::ringlet::nn::cuda::ThrowCudaFailure(            \
          __FILE__, __LINE__, #call,                    \
          ::ringlet::nn::cuda::CublasErrorString(rc_)); \
    }                                                   \
  } while (0)

// After a launch: a bad configuration shows up here, not at a later call.
#define RINGLET_CUDA_CHECK_LAUNCH() RINGLET_CUDA_CHECK(cudaGetLastError())

#endif  // RINGLET_NN_CUDA_CUDA_CHECK_H_
