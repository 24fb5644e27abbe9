// cuBLAS, loaded on first use instead of linked: loading libcublasLt costs
// every process about 150 MiB of resident memory (measured here), which a
// CPU-only run of a CUDA build should not pay. Only the calls nn makes are
// resolved; a missing library is a DeviceError saying which file.
#ifndef RINGLET_NN_CUDA_CUBLAS_LIBRARY_H_
#define RINGLET_NN_CUDA_CUBLAS_LIBRARY_H_

#include <cublas_v2.h>

namespace ringlet::nn::cuda {

struct CublasLibrary {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasSgemv_v2) sgemv;
  // cublasGemmEx's C signature (C++ sees it overloaded): bfloat16 operands
  // (autocast).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t,
                            cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*,
                            cudaDataType, int, const void*, void*, cudaDataType,
                            int, cublasComputeType_t, cublasGemmAlgo_t);
  decltype(&cublasGetStatusString) status_string;
};

// The library, loaded by the first call (thread safe). Throws DeviceError
// when libcublas.so.<major> or one of its functions cannot be found.
const CublasLibrary& Cublas();

}  // namespace ringlet::nn::cuda

#endif  // RINGLET_NN_CUDA_CUBLAS_LIBRARY_H_
