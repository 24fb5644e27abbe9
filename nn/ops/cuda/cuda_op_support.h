// What nn's CUDA ops share: the device's context made current for an op,
// and cuDNN descriptors that free themselves.
#ifndef RINGLET_NN_OPS_CUDA_CUDA_OP_SUPPORT_H_
#define RINGLET_NN_OPS_CUDA_CUDA_OP_SUPPORT_H_

#include <cudnn.h>

#include <cstdint>

#include "nn/cuda/cuda_check.h"
#include "nn/cuda/device_context.h"
#include "nn/ops/cuda/library_limits.h"
#include "nn/tensor.h"

namespace ringlet::nn::cuda_ops {

// The device of `t` made current, with its stream and library handles.
struct OnDevice {
  explicit OnDevice(const Tensor& t)
      : guard(t.device().index),
        context(cuda::DeviceContext::For(t.device().index)) {}
  cudaStream_t stream() const { return context.stream(); }
  gpu::DeviceGuard guard;
  cuda::DeviceContext& context;
};

// Device memory from the device's caching allocator for one op's scratch
// (cuDNN workspaces); freed at scope end, reused in stream order.
class Scratch {
 public:
  Scratch(cuda::DeviceContext& context, size_t bytes)
      : context_(context), data_(context.allocator().Allocate(bytes)) {}
  ~Scratch() { context_.allocator().Free(data_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* data() const { return data_; }

 private:
  cuda::DeviceContext& context_;
  void* data_;
};

// cuDNN's name for a tensor's element type.
inline cudnnDataType_t CudnnType(DType dtype) {
  return dtype == DType::kBFloat16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

// An NCHW tensor descriptor, float32 unless said. Throws ShapeError for a
// shape past cuDNN's limits (CheckCudnnTensor), before any cuDNN call.
class TensorDesc {
 public:
  TensorDesc(int64_t n, int64_t c, int64_t h, int64_t w,
             DType dtype = DType::kFloat32) {
    CheckCudnnTensor(n, c, h, w);
    RINGLET_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
    RINGLET_CUDNN_CHECK(cudnnSetTensor4dDescriptor(
        desc_, CUDNN_TENSOR_NCHW, CudnnType(dtype), static_cast<int>(n),
        static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)));
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(desc_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

}  // namespace ringlet::nn::cuda_ops

#endif  // RINGLET_NN_OPS_CUDA_CUDA_OP_SUPPORT_H_
