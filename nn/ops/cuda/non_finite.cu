// Non-finite values counted on CUDA devices: one launch per list of
// tensors (tensor_lists.cuh), each tensor's count in its own slot and
// their sum last, so the update kernels can skip a step on the device.
#include <vector>

#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/cuda/tensor_lists.cuh"
#include "nn/ops/non_finite.h"

namespace ringlet::nn::cuda_ops {
namespace {

// Tensor blockIdx.y of `list`; one atomic per block, not per element (the
// count is almost always 0).
__global__ void CountNonFiniteEachKernel(TensorList list, unsigned int* counts,
                                         unsigned int* total) {
  __shared__ unsigned int block_count;
  if (threadIdx.x == 0) block_count = 0;
  __syncthreads();
  const float* x = list.data[blockIdx.y];
  const int64_t n = list.size[blockIdx.y];
  unsigned int mine = 0;
  RINGLET_FOR_EACH_ELEMENT(i, n) { mine += isfinite(x[i]) ? 0u : 1u; }
  if (mine > 0) atomicAdd(&block_count, mine);
  __syncthreads();
  if (threadIdx.x == 0 && block_count > 0) {
    atomicAdd(&counts[blockIdx.y], block_count);
    atomicAdd(total, block_count);
  }
}

Tensor QueueCountNonFiniteCuda(const std::vector<const Tensor*>& tensors,
                               std::vector<int64_t>*) {
  OnDevice on(*tensors.front());
  const int64_t n = static_cast<int64_t>(tensors.size());
  Tensor slots({n + 1}, tensors.front()->device());  // Zeros: 0u as well.
  unsigned int* counts = reinterpret_cast<unsigned int*>(slots.device_data());
  ForEachList(tensors.size(), [&](size_t first, int count) {
    const TensorList list = ListOf(tensors, first, count);
    CountNonFiniteEachKernel<<<ListGrid(list.size, count), kListThreads, 0,
                               on.stream()>>>(list, counts + first, counts + n);
    RINGLET_CUDA_CHECK_LAUNCH();
  });
  return slots;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::count_non_finite, DeviceType::kCuda,
                        QueueCountNonFiniteCuda);

}  // namespace ringlet::nn::cuda_ops
