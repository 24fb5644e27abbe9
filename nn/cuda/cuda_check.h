// The check macros of the CUDA libraries nn uses, beside the runtime's
// (gpu/cuda_check.h: RINGLET_CUDA_CHECK, RINGLET_CUDA_CHECK_LAUNCH). Each
// turns a failed call into a gpu::CudaError naming the file, the line, the
// call and the library's own error string, e.g.
//   "nn/ops/cuda/conv2d.cc:88: cudnnConvolutionForward(...):
//    CUDNN_STATUS_BAD_PARAM".
#ifndef RINGLET_NN_CUDA_CUDA_CHECK_H_
#define RINGLET_NN_CUDA_CUDA_CHECK_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

#include "gpu/cuda_check.h"
#include "gpu/cuda_error.h"
#include "nn/cuda/cublas_library.h"

namespace ringlet::nn::cuda {

// Through the loaded library (cublas_library.h): nn does not link cuBLAS.
inline std::string CublasErrorString(cublasStatus_t status) {
  return Cublas().status_string(status);
}

}  // namespace ringlet::nn::cuda

#define RINGLET_CUDNN_CHECK(call)                               \
  do {                                                          \
    const cudnnStatus_t rc_ = (call);                           \
    if (rc_ != CUDNN_STATUS_SUCCESS) {                          \
      ::ringlet::gpu::ThrowCudaError(__FILE__, __LINE__, #call, \
                                     cudnnGetErrorString(rc_)); \
    }                                                           \
  } while (0)

#define RINGLET_CUBLAS_CHECK(call)                      \
  do {                                                  \
    const cublasStatus_t rc_ = (call);                  \
    if (rc_ != CUBLAS_STATUS_SUCCESS) {                 \
      ::ringlet::gpu::ThrowCudaError(                   \
          __FILE__, __LINE__, #call,                    \
          ::ringlet::nn::cuda::CublasErrorString(rc_)); \
    }                                                   \
  } while (0)

#endif  // RINGLET_NN_CUDA_CUDA_CHECK_H_
