// Kernels over a list of tensors (as torch's foreach ops): a model's
// gradients in one launch or a few, not one launch per parameter. The
// list travels by value as the kernel's argument; blockIdx.y is the
// tensor, the grid-stride loop its elements.
#ifndef RINGLET_NN_OPS_CUDA_TENSOR_LISTS_CUH_
#define RINGLET_NN_OPS_CUDA_TENSOR_LISTS_CUH_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "nn/cuda/float_types.cuh"
#include "nn/tensor.h"

namespace ringlet::nn::cuda_ops {

// Tensors one launch takes (a kernel argument holds at most 4 KiB).
inline constexpr int kMaxListedTensors = 48;
inline constexpr int kListThreads = 256;

// Blocks per listed tensor: enough for the largest, about 4096 in all.
inline dim3 ListGrid(const int64_t* sizes, int count) {
  constexpr int64_t kMaxBlocks = 4096;
  int64_t largest = 0;
  for (int t = 0; t < count; ++t) largest = std::max(largest, sizes[t]);
  const int64_t wanted =
      std::max<int64_t>(1, (largest + kListThreads - 1) / kListThreads);
  const int64_t share = std::max<int64_t>(1, kMaxBlocks / count);
  return dim3(static_cast<unsigned int>(std::min(wanted, share)),
              static_cast<unsigned int>(count));
}

// Calls fill(first, count) for each run of at most kMaxListedTensors of
// `n` tensors, in order.
template <typename Fn>
void ForEachList(size_t n, Fn&& fill) {
  for (size_t first = 0; first < n; first += kMaxListedTensors) {
    fill(first,
         static_cast<int>(std::min<size_t>(kMaxListedTensors, n - first)));
  }
}

// Up to kMaxListedTensors float32 device arrays and their sizes.
struct TensorList {
  float* data[kMaxListedTensors];
  int64_t size[kMaxListedTensors];
  int count = 0;
};

// `tensors[first, first + count)` as a TensorList.
template <typename T>
TensorList ListOf(const std::vector<T*>& tensors, size_t first, int count) {
  TensorList list;
  for (int t = 0; t < count; ++t) {
    list.data[t] = const_cast<float*>(tensors[first + t]->device_data());
    list.size[t] = tensors[first + t]->numel();
  }
  list.count = count;
  return list;
}

}  // namespace ringlet::nn::cuda_ops

#endif  // RINGLET_NN_OPS_CUDA_TENSOR_LISTS_CUH_
