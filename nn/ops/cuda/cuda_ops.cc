#include "nn/ops/cuda/cuda_ops.h"

#include "nn/cuda/device_context.h"
#include "nn/cuda/elementwise_kernels.h"

namespace ringlet::nn::cuda_ops {
namespace {

// The device's stream, with the device current for the launch.
struct Launch {
  explicit Launch(const Tensor& t)
      : guard(t.device().index),
        stream(cuda::DeviceContext::For(t.device().index).stream()) {}
  cuda::DeviceGuard guard;
  cudaStream_t stream;
};

}  // namespace

Tensor ReluForward(const Tensor& x) {
  Launch launch(x);
  Tensor y = Tensor::Uninitialized(x.shape(), x.device());
  cuda::relu_forward(x.data(), y.data(), x.numel(), launch.stream);
  return y;
}

Tensor ReluBackward(const Tensor& y, const Tensor& dy) {
  Launch launch(y);
  Tensor dx = Tensor::Uninitialized(y.shape(), y.device());
  cuda::relu_backward(y.data(), dy.data(), dx.data(), y.numel(), launch.stream);
  return dx;
}

Tensor Add(const Tensor& a, const Tensor& b) {
  Launch launch(a);
  Tensor out = Tensor::Uninitialized(a.shape(), a.device());
  cuda::add_forward(a.data(), b.data(), out.data(), a.numel(), launch.stream);
  return out;
}

void AddInPlace(Tensor& a, const Tensor& b) {
  Launch launch(a);
  cuda::add_forward(a.data(), b.data(), a.data(), a.numel(), launch.stream);
}

void SgdUpdate(Tensor& value, const Tensor& grad, Tensor* velocity, float lr,
               float momentum, float weight_decay) {
  Launch launch(value);
  cuda::sgd_update_forward(value.data(), grad.data(),
                           velocity ? velocity->data() : nullptr, value.numel(),
                           lr, momentum, weight_decay, launch.stream);
}

}  // namespace ringlet::nn::cuda_ops
