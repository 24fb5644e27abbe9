// What nn keeps per GPU: a stream all of the device's work runs on, cuDNN
// and cuBLAS handles bound to that stream, and a caching allocator over
// cudaMalloc. Made on first use and kept until the process exits.
//
// One stream per device keeps the CPU path's semantics (each op finishes
// before the next starts, in order) without host synchronisation, and
// makes the allocator's reuse of freed blocks safe.
#ifndef RINGLET_NN_CUDA_DEVICE_CONTEXT_H_
#define RINGLET_NN_CUDA_DEVICE_CONTEXT_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <memory>
#include <mutex>

#include "gpu/device_guard.h"
#include "nn/cuda/caching_allocator.h"

namespace ringlet::nn::cuda {

class DeviceContext {
 public:
  // The context of GPU `device`, made on first use (thread safe). Throws
  // DeviceError naming the device when it does not exist or a library
  // cannot start on it.
  static DeviceContext& For(int device);
  ~DeviceContext();

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  // Made on first use (cuBLAS is loaded then; see cublas_library.h).
  cublasHandle_t cublas();
  CachingAllocator& allocator() { return *allocator_; }

  // Waits for everything queued on the stream (before the host reads).
  void Synchronize();

 private:
  explicit DeviceContext(int device);

  int device_;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  std::once_flag cublas_once_;
  cublasHandle_t cublas_ = nullptr;
  std::unique_ptr<CachingAllocator> allocator_;
};

}  // namespace ringlet::nn::cuda

#endif  // RINGLET_NN_CUDA_DEVICE_CONTEXT_H_
