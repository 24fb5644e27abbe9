// Elementwise ops, ReLU, the non-finite count, the optimizers' updates and
// conversions on CUDA devices: nn's own kernels (nn/cuda) and cuDNN's
// activation.
#include <vector>

#include "nn/cuda/elementwise_kernels.h"
#include "nn/ops/activation.h"
#include "nn/ops/autocast.h"
#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/non_finite.h"
#include "nn/ops/optimizer_updates.h"

namespace ringlet::nn::cuda_ops {
namespace {

// ReLU through cuDNN's activation, on the tensor viewed as [1, 1, 1, n].
struct ReluDesc {
  ReluDesc() {
    RINGLET_CUDNN_CHECK(cudnnCreateActivationDescriptor(&desc));
    RINGLET_CUDNN_CHECK(cudnnSetActivationDescriptor(
        desc, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
  ~ReluDesc() { cudnnDestroyActivationDescriptor(desc); }
  cudnnActivationDescriptor_t desc = nullptr;
};

Tensor ReluForwardCuda(const Tensor& x) {
  OnDevice on(x);
  Tensor y = OutputLike(x, x.dtype());
  if (x.numel() == 0) return y;
  if (x.dtype() == DType::kBFloat16) {  // A kernel of ours, as the CPU's.
    cuda::relu_bf16_forward(x.bf16_data(), y.bf16_data(), x.numel(),
                            on.stream());
    return y;
  }
  const ReluDesc relu;
  const TensorDesc desc(1, 1, 1, x.numel());
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnActivationForward(
      on.context.cudnn(), relu.desc, &one, desc.get(), x.device_data(), &zero,
      desc.get(), y.device_data()));
  return y;
}

// cuDNN takes the forward's input too; for ReLU y > 0 exactly where x > 0,
// so y stands in for x (the CPU op is written from y as well).
Tensor ReluBackwardCuda(const Tensor& y, const Tensor& dy_any) {
  OnDevice on(y);
  const Tensor dy = InFormatOf(dy_any, y);
  Tensor dx = OutputLike(y, dy.dtype());
  if (y.numel() == 0) return dx;
  if (dy.dtype() == DType::kBFloat16) {  // y is bfloat16 too (the front).
    cuda::relu_bf16_backward(y.bf16_data(), dy.bf16_data(), dx.bf16_data(),
                             y.numel(), on.stream());
    return dx;
  }
  const ReluDesc relu;
  const TensorDesc desc(1, 1, 1, y.numel());
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnActivationBackward(
      on.context.cudnn(), relu.desc, &one, desc.get(), y.device_data(),
      desc.get(), dy.device_data(), desc.get(), y.device_data(), &zero,
      desc.get(), dx.device_data()));
  return dx;
}

Tensor AddCuda(const Tensor& a, const Tensor& b_any) {
  OnDevice on(a);
  const Tensor b = InFormatOf(b_any, a);
  Tensor out = OutputLike(a, a.dtype());
  if (a.dtype() == DType::kBFloat16) {  // b is bfloat16 too (the front).
    cuda::add_bf16_forward(a.bf16_data(), b.bf16_data(), out.bf16_data(),
                           a.numel(), on.stream());
    return out;
  }
  cuda::add_forward(a.device_data(), b.device_data(), out.device_data(),
                    a.numel(), on.stream());
  return out;
}

void AddInPlaceCuda(Tensor& a, const Tensor& b_any) {
  OnDevice on(a);
  const Tensor b = InFormatOf(b_any, a);
  if (a.dtype() == DType::kBFloat16) {
    cuda::add_bf16_forward(a.bf16_data(), b.bf16_data(), a.bf16_data(),
                           a.numel(), on.stream());
    return;
  }
  cuda::add_forward(a.device_data(), b.device_data(), a.device_data(),
                    a.numel(), on.stream());
}

void AddReluInPlaceCuda(Tensor& y, const Tensor& residual_any, bool relu) {
  OnDevice on(y);
  const Tensor residual =
      residual_any.defined() ? InFormatOf(residual_any, y) : Tensor();
  if (y.dtype() == DType::kBFloat16) {
    cuda::add_relu_bf16_in_place(
        y.bf16_data(), residual.defined() ? residual.bf16_data() : nullptr,
        relu, y.numel(), on.stream());
    return;
  }
  cuda::add_relu_in_place(y.device_data(),
                          residual.defined() ? residual.device_data() : nullptr,
                          relu, y.numel(), on.stream());
}

void AddScaledInPlaceCuda(Tensor& a, const Tensor& b_any, float scale) {
  OnDevice on(a);
  const Tensor b = InFormatOf(b_any, a);
  cuda::add_scaled_forward(a.device_data(), b.device_data(), scale, a.numel(),
                           on.stream());
}

void DivideInPlaceCuda(Tensor& x, float divisor) {
  OnDevice on(x);
  cuda::divide_forward(x.device_data(), x.numel(), divisor, on.stream());
}

namespace {

// `tensors` in lists of up to kMaxListedTensors for the list kernels (one
// list for most models; the counting kernel only reads them).
template <typename T>
std::vector<cuda::TensorList> ListsOf(const std::vector<T*>& tensors) {
  std::vector<cuda::TensorList> lists;
  for (T* t : tensors) {
    if (lists.empty() || lists.back().count == cuda::kMaxListedTensors) {
      lists.emplace_back();
    }
    cuda::TensorList& list = lists.back();
    list.data[list.count] = const_cast<float*>(t->device_data());
    list.size[list.count] = t->numel();
    ++list.count;
  }
  return lists;
}

}  // namespace

Tensor QueueCountNonFiniteCuda(const std::vector<const Tensor*>& tensors,
                               std::vector<int64_t>*) {
  OnDevice on(*tensors.front());
  const int64_t n = static_cast<int64_t>(tensors.size());
  Tensor slots({n + 1}, tensors.front()->device());  // Zeros: 0u as well.
  unsigned int* counts = reinterpret_cast<unsigned int*>(slots.device_data());
  int64_t first = 0;
  for (const cuda::TensorList& list : ListsOf(tensors)) {
    cuda::count_nonfinite_each(list, counts + first, counts + n, on.stream());
    first += list.count;
  }
  return slots;
}

void ScaleInPlaceCuda(Tensor& x, float factor) {
  OnDevice on(x);
  cuda::scale_forward(x.device_data(), x.numel(), factor, on.stream());
}

double SumOfSquaresCuda(const std::vector<const Tensor*>& tensors) {
  OnDevice on(*tensors.front());
  // Every tensor's partial sums into one buffer, one read back, added up
  // on the host in a fixed order.
  const size_t count = tensors.size() * cuda::kSumOfSquaresBlocks;
  Scratch partials(on.context, count * sizeof(double));
  double* device = static_cast<double*>(partials.data());
  for (size_t t = 0; t < tensors.size(); ++t) {
    cuda::sum_of_squares_partials(
        tensors[t]->device_data(), tensors[t]->numel(),
        device + t * cuda::kSumOfSquaresBlocks, on.stream());
  }
  std::vector<double> host(count);
  RINGLET_CUDA_CHECK(cudaMemcpyAsync(host.data(), device,
                                     count * sizeof(double),
                                     cudaMemcpyDeviceToHost, on.stream()));
  on.context.Synchronize();
  double sum = 0;
  for (double v : host) sum += v;
  return sum;
}

// The device's sum of the non-finite counts, which the update kernels read
// to skip themselves; null when nothing is counted.
const unsigned int* SkipOf(const NonFiniteCounts* skip_if_any) {
  return skip_if_any != nullptr ? skip_if_any->device_total() : nullptr;
}

void SgdUpdateCuda(Tensor& value, const Tensor& grad, Tensor* velocity,
                   const SgdStep& step, const NonFiniteCounts* skip_if_any) {
  OnDevice on(value);
  cuda::sgd_update_forward(value.device_data(), grad.device_data(),
                           velocity ? velocity->device_data() : nullptr,
                           value.numel(), step.lr, step.momentum,
                           step.weight_decay, SkipOf(skip_if_any), on.stream());
}

void SgdUpdateAllCuda(const std::vector<Tensor*>& values,
                      const std::vector<const Tensor*>& grads,
                      const std::vector<Tensor*>& velocities,
                      const SgdStep& step, const NonFiniteCounts* skip_if_any) {
  OnDevice on(*values.front());
  const bool with_velocity = step.momentum != 0.0f;
  for (size_t first = 0; first < values.size();
       first += cuda::kMaxListedTensors) {
    cuda::SgdTensors list;
    for (size_t t = first;
         t < values.size() && list.count < cuda::kMaxListedTensors; ++t) {
      list.param[list.count] = values[t]->device_data();
      list.grad[list.count] = grads[t]->device_data();
      list.velocity[list.count] =
          with_velocity ? velocities[t]->device_data() : nullptr;
      list.size[list.count] = values[t]->numel();
      ++list.count;
    }
    cuda::sgd_update_each(list, step.lr, step.momentum, step.weight_decay,
                          SkipOf(skip_if_any), on.stream());
  }
}

void AdamUpdateAllCuda(const std::vector<Tensor*>& values,
                       const std::vector<const Tensor*>& grads,
                       const std::vector<Tensor*>& exp_avgs,
                       const std::vector<Tensor*>& exp_avg_sqs,
                       const AdamStep& step,
                       const NonFiniteCounts* skip_if_any) {
  OnDevice on(*values.front());
  for (size_t first = 0; first < values.size();
       first += cuda::kMaxListedTensors) {
    cuda::AdamTensors list;
    for (size_t t = first;
         t < values.size() && list.count < cuda::kMaxListedTensors; ++t) {
      list.param[list.count] = values[t]->device_data();
      list.grad[list.count] = grads[t]->device_data();
      list.exp_avg[list.count] = exp_avgs[t]->device_data();
      list.exp_avg_sq[list.count] = exp_avg_sqs[t]->device_data();
      list.size[list.count] = values[t]->numel();
      ++list.count;
    }
    cuda::adam_update_each(list, step.beta1, step.beta2, step.eps,
                           step.step_size, step.bias_correction2_sqrt,
                           step.decay, step.grad_decay, SkipOf(skip_if_any),
                           on.stream());
  }
}

void ZeroAllCuda(const std::vector<Tensor*>& tensors) {
  OnDevice on(*tensors.front());
  for (const cuda::TensorList& list : ListsOf(tensors)) {
    cuda::fill_each(list, 0.0f, on.stream());
  }
}

Tensor AsDTypeCuda(const Tensor& t, DType dtype) { return t.To(dtype); }

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::relu_forward, DeviceType::kCuda,
                        ReluForwardCuda);
RINGLET_REGISTER_KERNEL(kernels::relu_backward, DeviceType::kCuda,
                        ReluBackwardCuda);
RINGLET_REGISTER_KERNEL(kernels::add, DeviceType::kCuda, AddCuda);
RINGLET_REGISTER_KERNEL(kernels::add_in_place, DeviceType::kCuda,
                        AddInPlaceCuda);
RINGLET_REGISTER_KERNEL(kernels::add_relu_in_place, DeviceType::kCuda,
                        AddReluInPlaceCuda);
RINGLET_REGISTER_KERNEL(kernels::add_scaled_in_place, DeviceType::kCuda,
                        AddScaledInPlaceCuda);
RINGLET_REGISTER_KERNEL(kernels::divide_in_place, DeviceType::kCuda,
                        DivideInPlaceCuda);
RINGLET_REGISTER_KERNEL(kernels::scale_in_place, DeviceType::kCuda,
                        ScaleInPlaceCuda);
RINGLET_REGISTER_KERNEL(kernels::sum_of_squares, DeviceType::kCuda,
                        SumOfSquaresCuda);
RINGLET_REGISTER_KERNEL(kernels::count_non_finite, DeviceType::kCuda,
                        QueueCountNonFiniteCuda);
RINGLET_REGISTER_KERNEL(kernels::zero_all, DeviceType::kCuda, ZeroAllCuda);
RINGLET_REGISTER_KERNEL(kernels::sgd_update, DeviceType::kCuda, SgdUpdateCuda);
RINGLET_REGISTER_KERNEL(kernels::sgd_update_all, DeviceType::kCuda,
                        SgdUpdateAllCuda);
RINGLET_REGISTER_KERNEL(kernels::adam_update_all, DeviceType::kCuda,
                        AdamUpdateAllCuda);
RINGLET_REGISTER_KERNEL(kernels::as_dtype, DeviceType::kCuda, AsDTypeCuda);

}  // namespace ringlet::nn::cuda_ops
