// Max pooling on GPUs through cuDNN's deterministic max pooling, NaNs
// propagated (PyTorch's rule), in either memory format: the output keeps
// the input's, the input gradient too. Where a window holds tied maxima,
// cuDNN chooses which takes the gradient (the CPU: the first).
#include "nn/ops/max_pool.h"

#include "nn/ops/cuda/cuda_op_support.h"

namespace ringlet::nn::cuda_ops {
namespace {

struct MaxPoolDesc {
  explicit MaxPoolDesc(const MaxPool2dParams& params) {
    RINGLET_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&desc));
    RINGLET_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
        desc, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_PROPAGATE_NAN,
        params.kernel, params.kernel, params.padding, params.padding,
        params.stride, params.stride));
  }
  ~MaxPoolDesc() { cudnnDestroyPoolingDescriptor(desc); }
  MaxPoolDesc(const MaxPoolDesc&) = delete;
  MaxPoolDesc& operator=(const MaxPoolDesc&) = delete;
  cudnnPoolingDescriptor_t desc = nullptr;
};

Tensor MaxPool2dForwardCuda(const Tensor& x, const Shape& y_shape,
                            const MaxPool2dParams& params) {
  OnDevice on(x);
  Tensor y = Tensor::Uninitialized(y_shape, x.device(), DType::kFloat32,
                                   x.memory_format());
  if (y.numel() == 0) return y;
  const MaxPoolDesc pool(params);
  const TensorDesc x_desc(x), y_desc(y);
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnPoolingForward(on.context.cudnn(), pool.desc, &one,
                                          x_desc.get(), x.device_data(), &zero,
                                          y_desc.get(), y.device_data()));
  return y;
}

Tensor MaxPool2dBackwardCuda(const Tensor& x, const Tensor& y_any,
                             const Tensor& dy_any,
                             const MaxPool2dParams& params) {
  OnDevice on(x);
  Tensor dx = OutputLike(x, DType::kFloat32);
  if (dx.numel() == 0) return dx;
  if (dy_any.numel() == 0) {
    dx.Fill(0.0f);
    return dx;
  }
  // cuDNN reads x, y and dy in one layout: x's.
  const Tensor y = InFormatOf(y_any, x), dy = InFormatOf(dy_any, x);
  const MaxPoolDesc pool(params);
  const TensorDesc x_desc(x), y_desc(y);
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnPoolingBackward(
      on.context.cudnn(), pool.desc, &one, y_desc.get(), y.device_data(),
      y_desc.get(), dy.device_data(), x_desc.get(), x.device_data(), &zero,
      x_desc.get(), dx.device_data()));
  return dx;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::max_pool2d_forward, DeviceType::kCuda,
                        MaxPool2dForwardCuda);
RINGLET_REGISTER_KERNEL(kernels::max_pool2d_backward, DeviceType::kCuda,
                        MaxPool2dBackwardCuda);

}  // namespace ringlet::nn::cuda_ops
