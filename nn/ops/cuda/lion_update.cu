// Lion's update on CUDA devices, element for element as the CPU's
// (LionElement): a model's tensors in one launch or a few
// (tensor_lists.cuh), skipped on the device when the step's non-finite
// count (may be null) is not zero.
#include <vector>

#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/cuda/tensor_lists.cuh"
#include "nn/ops/lion_update.h"

namespace ringlet::nn::cuda_ops {
namespace {

struct LionTensors {
  float* param[kMaxListedTensors];
  const float* grad[kMaxListedTensors];
  float* exp_avg[kMaxListedTensors];
  int64_t size[kMaxListedTensors];
  int count = 0;
};

__global__ void LionUpdateEachKernel(LionTensors list, LionStep step,
                                     const unsigned int* skip) {
  if (skip != nullptr && *skip != 0) return;
  float* p = list.param[blockIdx.y];
  const float* g = list.grad[blockIdx.y];
  float* m = list.exp_avg[blockIdx.y];
  const int64_t n = list.size[blockIdx.y];
  RINGLET_FOR_EACH_ELEMENT(i, n) { LionElement(p[i], g[i], m[i], step); }
}

void LionUpdateAllCuda(const std::vector<Tensor*>& values,
                       const std::vector<const Tensor*>& grads,
                       const std::vector<Tensor*>& exp_avgs,
                       const LionStep& step,
                       const NonFiniteCounts* skip_if_any) {
  OnDevice on(*values.front());
  const unsigned int* skip =
      skip_if_any != nullptr ? skip_if_any->device_total() : nullptr;
  ForEachList(values.size(), [&](size_t first, int count) {
    LionTensors list;
    for (int t = 0; t < count; ++t) {
      list.param[t] = values[first + t]->device_data();
      list.grad[t] = grads[first + t]->device_data();
      list.exp_avg[t] = exp_avgs[first + t]->device_data();
      list.size[t] = values[first + t]->numel();
    }
    list.count = count;
    LionUpdateEachKernel<<<ListGrid(list.size, count), kListThreads, 0,
                           on.stream()>>>(list, step, skip);
    RINGLET_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::lion_update_all, DeviceType::kCuda,
                        LionUpdateAllCuda);

}  // namespace ringlet::nn::cuda_ops
