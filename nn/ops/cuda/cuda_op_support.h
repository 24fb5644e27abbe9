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

// An op's output of `like`'s shape, device and memory format, of `dtype`
// (values unset): elementwise results keep their input's order.
inline Tensor OutputLike(const Tensor& like, DType dtype) {
  return Tensor::Uninitialized(like.shape(), like.device(), dtype,
                               like.memory_format());
}

// `t` (of `like`'s shape) stored in `like`'s memory format: operands read
// element by element side by side must order their elements alike (a
// conversion only where a model mixes formats).
inline Tensor InFormatOf(const Tensor& t, const Tensor& like) {
  return t.ToMemoryFormat(like.memory_format());
}

// cuDNN's name for a tensor's element type.
inline cudnnDataType_t CudnnType(DType dtype) {
  return dtype == DType::kBFloat16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

// cuDNN's name for a memory format.
inline cudnnTensorFormat_t CudnnFormat(MemoryFormat format) {
  return format == MemoryFormat::kChannelsLast ? CUDNN_TENSOR_NHWC
                                               : CUDNN_TENSOR_NCHW;
}

// A [n, c, h, w] tensor descriptor, float32 and NCHW unless said. Throws
// ShapeError for a shape past cuDNN's limits (CheckCudnnTensor), before
// any cuDNN call.
class TensorDesc {
 public:
  TensorDesc(int64_t n, int64_t c, int64_t h, int64_t w,
             DType dtype = DType::kFloat32,
             MemoryFormat format = MemoryFormat::kContiguous) {
    CheckCudnnTensor(n, c, h, w);
    RINGLET_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
    RINGLET_CUDNN_CHECK(cudnnSetTensor4dDescriptor(
        desc_, CudnnFormat(format), CudnnType(dtype), static_cast<int>(n),
        static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)));
  }
  // A rank-4 tensor's own: its shape, type and memory format.
  explicit TensorDesc(const Tensor& t)
      : TensorDesc(t.dim(0), t.dim(1), t.dim(2), t.dim(3), t.dtype(),
                   t.memory_format()) {}
  ~TensorDesc() { cudnnDestroyTensorDescriptor(desc_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

}  // namespace ringlet::nn::cuda_ops

#endif  // RINGLET_NN_OPS_CUDA_CUDA_OP_SUPPORT_H_
