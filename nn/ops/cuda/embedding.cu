// Embedding on CUDA devices: the ids checked on the host (one copy back,
// the op's only wait), a thread per output element gathering, and for the
// gradient a thread per column adding the positions in order (no atomics:
// the CPU's order, the same bits every run).
#include <vector>

#include "nn/cuda/float_types.cuh"
#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/embedding.h"

namespace ringlet::nn::cuda_ops {
namespace {

template <typename T>
__global__ void GatherKernel(const float* ids, const float* weight, int64_t n,
                             int64_t d, T* y) {
  RINGLET_FOR_EACH_ELEMENT(e, n * d) {
    const int64_t i = e / d, j = e % d;
    y[e] = FromFloat<T>(weight[static_cast<int64_t>(ids[i]) * d + j]);
  }
}

template <typename G>
__global__ void ScatterAddKernel(const float* ids, const G* dy, int64_t n,
                                 int64_t d, float* dw) {
  RINGLET_FOR_EACH_ELEMENT(j, d) {
    for (int64_t i = 0; i < n; ++i) {
      dw[static_cast<int64_t>(ids[i]) * d + j] += ToFloat(dy[i * d + j]);
    }
  }
}

void CheckIdsOnHost(const Tensor& ids, int64_t vocab) {
  std::vector<float> host(ids.numel());
  CopyToHost(ids, host.data());
  CheckEmbeddingIds(host.data(), ids.numel(), vocab);
}

Tensor EmbeddingForwardCuda(const Tensor& ids, const Tensor& weight,
                            DType out_type) {
  const int64_t n = ids.numel(), d = weight.dim(1);
  CheckIdsOnHost(ids, weight.dim(0));
  OnDevice on(weight);
  Shape shape = ids.shape();
  shape.push_back(d);
  Tensor y = Tensor::Uninitialized(shape, weight.device(), out_type);
  if (y.numel() == 0) return y;
  WithElementType(out_type, [&](auto t) {
    using T = decltype(t);
    GatherKernel<T>
        <<<ElementwiseBlocks(n * d), kElementwiseThreads, 0, on.stream()>>>(
            ids.device_data(), weight.device_data(), n, d,
            static_cast<T*>(y.raw_data()));
  });
  RINGLET_CUDA_CHECK(cudaGetLastError());
  return y;
}

Tensor EmbeddingBackwardCuda(const Tensor& ids, const Tensor& dy_any,
                             int64_t vocab) {
  const int64_t n = ids.numel(), d = dy_any.dim(dy_any.rank() - 1);
  CheckIdsOnHost(ids, vocab);
  OnDevice on(dy_any);
  const Tensor dy = dy_any.ToMemoryFormat(MemoryFormat::kContiguous);
  Tensor dw({vocab, d}, dy.device());  // Zeros.
  if (n == 0 || d == 0) return dw;
  WithElementType(dy.dtype(), [&](auto g) {
    using G = decltype(g);
    ScatterAddKernel<G>
        <<<ElementwiseBlocks(d), kElementwiseThreads, 0, on.stream()>>>(
            ids.device_data(), static_cast<const G*>(dy.raw_data()), n, d,
            dw.device_data());
  });
  RINGLET_CUDA_CHECK(cudaGetLastError());
  return dw;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::embedding_forward, DeviceType::kCuda,
                        EmbeddingForwardCuda);
RINGLET_REGISTER_KERNEL(kernels::embedding_backward, DeviceType::kCuda,
                        EmbeddingBackwardCuda);

}  // namespace ringlet::nn::cuda_ops
