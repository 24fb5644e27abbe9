// Softmax over the last axis on CUDA devices: one thread per row (as the
// loss's kernel, loss.cu), float32 arithmetic with its sums in double, the
// CPU's order within a row, for float32 and bfloat16. Rows are what a
// model's output layer gives (classes, a vocabulary): a thread walking one
// is not the cost of a step.
#include "nn/cuda/float_types.cuh"
#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/softmax.h"

namespace ringlet::nn::cuda_ops {
namespace {

template <typename T>
__global__ void SoftmaxForwardKernel(const T* x, T* y, int64_t rows,
                                     int64_t k) {
  RINGLET_FOR_EACH_ELEMENT(i, rows) {
    const T* row = x + i * k;
    T* out = y + i * k;
    float max = ToFloat(row[0]);
    for (int64_t j = 1; j < k; ++j) max = fmaxf(max, ToFloat(row[j]));
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += expf(ToFloat(row[j]) - max);
    const float scale = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < k; ++j) {
      out[j] = FromFloat<T>(expf(ToFloat(row[j]) - max) * scale);
    }
  }
}

template <typename T, typename G>
__global__ void SoftmaxBackwardKernel(const T* y, const G* dy, G* dx,
                                      int64_t rows, int64_t k) {
  RINGLET_FOR_EACH_ELEMENT(i, rows) {
    const T* yr = y + i * k;
    const G* gr = dy + i * k;
    double dot = 0;
    for (int64_t j = 0; j < k; ++j) {
      dot += double{ToFloat(yr[j])} * ToFloat(gr[j]);
    }
    const float d = static_cast<float>(dot);
    for (int64_t j = 0; j < k; ++j) {
      dx[i * k + j] = FromFloat<G>(ToFloat(yr[j]) * (ToFloat(gr[j]) - d));
    }
  }
}

// Rows of the last axis, in the order the elements are stored: a
// channels-last [N, C, H, W] tensor is made contiguous first.
Tensor Rows(const Tensor& t) {
  return t.ToMemoryFormat(MemoryFormat::kContiguous);
}

Tensor SoftmaxForwardCuda(const Tensor& x_any) {
  const Tensor x = Rows(x_any);
  OnDevice on(x);
  Tensor y = OutputLike(x, x.dtype());
  const int64_t k = x.shape().back();
  if (x.numel() == 0) return y;
  const int64_t rows = x.numel() / k;
  WithElementType(x.dtype(), [&](auto t) {
    using T = decltype(t);
    SoftmaxForwardKernel<T>
        <<<ElementwiseBlocks(rows), kElementwiseThreads, 0, on.stream()>>>(
            static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()),
            rows, k);
  });
  RINGLET_CUDA_CHECK(cudaGetLastError());
  return y;
}

Tensor SoftmaxBackwardCuda(const Tensor& y_any, const Tensor& dy_any) {
  const Tensor y = Rows(y_any);
  const Tensor dy = Rows(dy_any);
  OnDevice on(y);
  Tensor dx = OutputLike(y, dy.dtype());
  const int64_t k = y.shape().back();
  if (y.numel() == 0) return dx;
  const int64_t rows = y.numel() / k;
  WithElementType(y.dtype(), [&](auto t) {
    using T = decltype(t);
    WithElementType(dy.dtype(), [&](auto g) {
      using G = decltype(g);
      SoftmaxBackwardKernel<T, G>
          <<<ElementwiseBlocks(rows), kElementwiseThreads, 0, on.stream()>>>(
              static_cast<const T*>(y.raw_data()),
              static_cast<const G*>(dy.raw_data()),
              static_cast<G*>(dx.raw_data()), rows, k);
    });
  });
  RINGLET_CUDA_CHECK(cudaGetLastError());
  return dx;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::softmax_forward, DeviceType::kCuda,
                        SoftmaxForwardCuda);
RINGLET_REGISTER_KERNEL(kernels::softmax_backward, DeviceType::kCuda,
                        SoftmaxBackwardCuda);

}  // namespace ringlet::nn::cuda_ops
