// Average and global average pooling on GPUs through cuDNN's pooling
// (windows counted whole: there is no padding). Global average pooling is
// one window the size of the plane. Either memory format: the output keeps
// the input's (a [N, C] output stores the same in both), average pooling's
// input gradient the output gradient's, global pooling's the process's
// activation format (nn/memory_format.h), which its input had.
#include "nn/ops/pooling.h"

#include "nn/memory_format.h"
#include "nn/ops/autocast.h"
#include "nn/ops/cuda/cuda_op_support.h"

namespace ringlet::nn::cuda_ops {
namespace {
namespace {

struct PoolDesc {
  PoolDesc(int64_t window_h, int64_t window_w, int64_t stride_h,
           int64_t stride_w) {
    RINGLET_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&desc));
    RINGLET_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
        desc, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
        CUDNN_NOT_PROPAGATE_NAN, static_cast<int>(window_h),
        static_cast<int>(window_w), 0, 0, static_cast<int>(stride_h),
        static_cast<int>(stride_w)));
  }
  ~PoolDesc() { cudnnDestroyPoolingDescriptor(desc); }
  cudnnPoolingDescriptor_t desc = nullptr;
};

Tensor Forward(const Tensor& x, const PoolDesc& pool, const Shape& y_shape) {
  OnDevice on(x);
  const MemoryFormat format = x.memory_format();
  Tensor y = Tensor::Uninitialized(
      y_shape, x.device(), DType::kFloat32,
      y_shape.size() == 4 ? format : MemoryFormat::kContiguous);
  if (y.numel() == 0) return y;
  const TensorDesc x_desc(x);
  const TensorDesc y_desc(
      y_shape[0], y_shape[1], y_shape.size() == 4 ? y_shape[2] : 1,
      y_shape.size() == 4 ? y_shape[3] : 1, DType::kFloat32, format);
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnPoolingForward(on.context.cudnn(), pool.desc, &one,
                                          x_desc.get(), x.device_data(), &zero,
                                          y_desc.get(), y.device_data()));
  return y;
}

// Average pooling's gradient depends on dy alone; cuDNN's interface still
// takes the forward's y and x, so dy and the output stand in for them.
// dx is written in `format`, dy's own when it is [N, C, P, Q].
Tensor Backward(const Shape& x_shape, const Tensor& dy, const PoolDesc& pool,
                MemoryFormat format) {
  OnDevice on(dy);
  Tensor dx =
      Tensor::Uninitialized(x_shape, dy.device(), DType::kFloat32, format);
  if (dx.numel() == 0) return dx;
  if (dy.numel() == 0) {
    dx.Fill(0.0f);
    return dx;
  }
  const TensorDesc x_desc(dx);
  const TensorDesc y_desc(dy.dim(0), dy.dim(1), dy.rank() == 4 ? dy.dim(2) : 1,
                          dy.rank() == 4 ? dy.dim(3) : 1, DType::kFloat32,
                          format);
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnPoolingBackward(
      on.context.cudnn(), pool.desc, &one, y_desc.get(), dy.device_data(),
      y_desc.get(), dy.device_data(), x_desc.get(), dx.device_data(), &zero,
      x_desc.get(), dx.device_data()));
  return dx;
}

}  // namespace

Tensor AvgPool2dForwardCuda(const Tensor& x, int kernel, int stride) {
  const Shape y_shape = {x.dim(0), x.dim(1), (x.dim(2) - kernel) / stride + 1,
                         (x.dim(3) - kernel) / stride + 1};
  return Forward(x, PoolDesc(kernel, kernel, stride, stride), y_shape);
}

Tensor AvgPool2dBackwardCuda(const Shape& x_shape, const Tensor& dy, int kernel,
                             int stride) {
  return Backward(x_shape, dy, PoolDesc(kernel, kernel, stride, stride),
                  dy.memory_format());
}

Tensor GlobalAvgPoolForwardCuda(const Tensor& x) {
  return Forward(x, PoolDesc(x.dim(2), x.dim(3), x.dim(2), x.dim(3)),
                 {x.dim(0), x.dim(1)});
}

Tensor GlobalAvgPoolBackwardCuda(const Shape& x_shape, const Tensor& dy) {
  return Backward(x_shape, dy,
                  PoolDesc(x_shape[2], x_shape[3], x_shape[2], x_shape[3]),
                  gpu_activation_format());
}

// bfloat16 average pooling in float32, the output in the input's type
// (autocast.h); cuDNN's kernels here are float32's.
Tensor AvgPoolForwardKernel(const Tensor& x, const Shape&, int kernel,
                            int stride) {
  if (x.dtype() == DType::kBFloat16) {
    return AsDType(
        AvgPool2dForwardCuda(AsDType(x, DType::kFloat32), kernel, stride),
        DType::kBFloat16);
  }
  return AvgPool2dForwardCuda(x, kernel, stride);
}

Tensor AvgPoolBackwardKernel(const Shape& x_shape, const Tensor& dy, int kernel,
                             int stride) {
  if (dy.dtype() == DType::kBFloat16) {
    return AsDType(AvgPool2dBackwardCuda(x_shape, AsDType(dy, DType::kFloat32),
                                         kernel, stride),
                   DType::kBFloat16);
  }
  return AvgPool2dBackwardCuda(x_shape, dy, kernel, stride);
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::avg_pool2d_forward, DeviceType::kCuda,
                        AvgPoolForwardKernel);
RINGLET_REGISTER_KERNEL(kernels::avg_pool2d_backward, DeviceType::kCuda,
                        AvgPoolBackwardKernel);
RINGLET_REGISTER_KERNEL(kernels::global_avg_pool_forward, DeviceType::kCuda,
                        GlobalAvgPoolForwardCuda);
RINGLET_REGISTER_KERNEL(kernels::global_avg_pool_backward, DeviceType::kCuda,
                        GlobalAvgPoolBackwardCuda);

}  // namespace ringlet::nn::cuda_ops
