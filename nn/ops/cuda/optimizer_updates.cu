// The optimizers' updates on CUDA devices, element for element as the
// CPU's (nn/ops/cpu/optimizer_updates.cc): a model's tensors in one launch
// or a few (tensor_lists.cuh), each launch skipped as a whole on the
// device when the step's non-finite count (may be null) is not zero.
#include <vector>

#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/cuda/tensor_lists.cuh"
#include "nn/ops/optimizer_updates.h"

namespace ringlet::nn::cuda_ops {
namespace {

struct SgdTensors {
  float* param[kMaxListedTensors];
  const float* grad[kMaxListedTensors];
  float* velocity[kMaxListedTensors];  // Null without momentum.
  int64_t size[kMaxListedTensors];
  int count = 0;
};

struct AdamTensors {
  float* param[kMaxListedTensors];
  const float* grad[kMaxListedTensors];
  float* exp_avg[kMaxListedTensors];
  float* exp_avg_sq[kMaxListedTensors];
  int64_t size[kMaxListedTensors];
  int count = 0;
};

// Without momentum p -= lr * (g + wd * p); with momentum
// v = momentum * v + g + wd * p, p -= lr * v.
__global__ void SgdUpdateEachKernel(SgdTensors list, float lr, float momentum,
                                    float weight_decay,
                                    const unsigned int* skip) {
  if (skip != nullptr && *skip != 0) return;
  float* p = list.param[blockIdx.y];
  const float* g = list.grad[blockIdx.y];
  float* v = list.velocity[blockIdx.y];
  const int64_t n = list.size[blockIdx.y];
  RINGLET_FOR_EACH_ELEMENT(i, n) {
    if (v == nullptr) {
      p[i] -= lr * (g[i] + weight_decay * p[i]);
    } else {
      v[i] = momentum * v[i] + g[i] + weight_decay * p[i];
      p[i] -= lr * v[i];
    }
  }
}

// g' = g + grad_decay p; p *= decay; m = b1 m + (1 - b1) g';
// v = b2 v + (1 - b2) g'^2; p -= step_size m / (sqrt(v) / bc2_sqrt + eps).
__global__ void AdamUpdateEachKernel(AdamTensors list, float beta1, float beta2,
                                     float eps, float step_size, float bc2_sqrt,
                                     float decay, float grad_decay,
                                     const unsigned int* skip) {
  if (skip != nullptr && *skip != 0) return;
  float* p = list.param[blockIdx.y];
  const float* g = list.grad[blockIdx.y];
  float* m = list.exp_avg[blockIdx.y];
  float* v = list.exp_avg_sq[blockIdx.y];
  const int64_t n = list.size[blockIdx.y];
  RINGLET_FOR_EACH_ELEMENT(i, n) {
    const float grad = g[i] + grad_decay * p[i];
    const float param = p[i] * decay;
    const float mean = beta1 * m[i] + (1.0f - beta1) * grad;
    const float square = beta2 * v[i] + (1.0f - beta2) * grad * grad;
    m[i] = mean;
    v[i] = square;
    p[i] = param - step_size * (mean / (sqrtf(square) / bc2_sqrt + eps));
  }
}

// The device's sum of the non-finite counts, which the update kernels read
// to skip themselves; null when nothing is counted.
const unsigned int* SkipOf(const NonFiniteCounts* skip_if_any) {
  return skip_if_any != nullptr ? skip_if_any->device_total() : nullptr;
}

void SgdUpdateAllCuda(const std::vector<Tensor*>& values,
                      const std::vector<const Tensor*>& grads,
                      const std::vector<Tensor*>& velocities,
                      const SgdStep& step, const NonFiniteCounts* skip_if_any) {
  OnDevice on(*values.front());
  const bool with_velocity = step.momentum != 0.0f;
  ForEachList(values.size(), [&](size_t first, int count) {
    SgdTensors list;
    for (int t = 0; t < count; ++t) {
      list.param[t] = values[first + t]->device_data();
      list.grad[t] = grads[first + t]->device_data();
      list.velocity[t] =
          with_velocity ? velocities[first + t]->device_data() : nullptr;
      list.size[t] = values[first + t]->numel();
    }
    list.count = count;
    SgdUpdateEachKernel<<<ListGrid(list.size, count), kListThreads, 0,
                          on.stream()>>>(
        list, step.lr, step.momentum, step.weight_decay, SkipOf(skip_if_any));
    RINGLET_CUDA_CHECK_LAUNCH();
  });
}

// One tensor: the same kernel as a whole model's, a list of one.
void SgdUpdateCuda(Tensor& value, const Tensor& grad, Tensor* velocity,
                   const SgdStep& step, const NonFiniteCounts* skip_if_any) {
  if (value.numel() == 0) return;
  SgdStep plain = step;  // Without a velocity the update has no momentum.
  if (velocity == nullptr) plain.momentum = 0.0f;
  SgdUpdateAllCuda({&value}, {&grad}, {velocity}, plain, skip_if_any);
}

void AdamUpdateAllCuda(const std::vector<Tensor*>& values,
                       const std::vector<const Tensor*>& grads,
                       const std::vector<Tensor*>& exp_avgs,
                       const std::vector<Tensor*>& exp_avg_sqs,
                       const AdamStep& step,
                       const NonFiniteCounts* skip_if_any) {
  OnDevice on(*values.front());
  ForEachList(values.size(), [&](size_t first, int count) {
    AdamTensors list;
    for (int t = 0; t < count; ++t) {
      list.param[t] = values[first + t]->device_data();
      list.grad[t] = grads[first + t]->device_data();
      list.exp_avg[t] = exp_avgs[first + t]->device_data();
      list.exp_avg_sq[t] = exp_avg_sqs[first + t]->device_data();
      list.size[t] = values[first + t]->numel();
    }
    list.count = count;
    AdamUpdateEachKernel<<<ListGrid(list.size, count), kListThreads, 0,
                           on.stream()>>>(
        list, step.beta1, step.beta2, step.eps, step.step_size,
        step.bias_correction2_sqrt, step.decay, step.grad_decay,
        SkipOf(skip_if_any));
    RINGLET_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::sgd_update, DeviceType::kCuda, SgdUpdateCuda);
RINGLET_REGISTER_KERNEL(kernels::sgd_update_all, DeviceType::kCuda,
                        SgdUpdateAllCuda);
RINGLET_REGISTER_KERNEL(kernels::adam_update_all, DeviceType::kCuda,
                        AdamUpdateAllCuda);

}  // namespace ringlet::nn::cuda_ops
