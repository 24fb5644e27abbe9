// Layer normalisation on CUDA devices, one kernel per pass for float32 and
// bfloat16 inputs: a block per row, its sums in double in a fixed tree
// (block_sum.cuh) as the CPU sums in double; gamma's and beta's gradients a
// thread per column summing the rows in order. So no result depends on
// timing, and the values are the CPU's to rounding.
#include <limits>
#include <string>

#include "nn/cuda/block_sum.cuh"
#include "nn/cuda/float_types.cuh"
#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/layer_norm.h"

namespace ringlet::nn::cuda_ops {
namespace {

constexpr int kRowThreads = 256;

template <typename T>
__global__ void ForwardKernel(const T* x, const float* gamma, const float* beta,
                              int64_t d, float eps, T* y, float* mean,
                              float* rstd) {
  __shared__ double shared[kRowThreads];
  const int64_t r = blockIdx.x;
  const T* row = x + r * d;
  double sum = 0;
  for (int64_t j = threadIdx.x; j < d; j += kRowThreads) sum += ToFloat(row[j]);
  const double mu = cuda::BlockSum<kRowThreads>(sum, shared) / d;
  double sq = 0;
  for (int64_t j = threadIdx.x; j < d; j += kRowThreads) {
    const double v = ToFloat(row[j]) - mu;
    sq += v * v;
  }
  const double var = cuda::BlockSum<kRowThreads>(sq, shared) / d;
  const float m = static_cast<float>(mu);
  const float s = static_cast<float>(1.0 / sqrt(var + eps));
  if (threadIdx.x == 0) {
    mean[r] = m;
    rstd[r] = s;
  }
  for (int64_t j = threadIdx.x; j < d; j += kRowThreads) {
    y[r * d + j] = FromFloat<T>((ToFloat(row[j]) - m) * s * gamma[j] + beta[j]);
  }
}

template <typename T, typename G>
__global__ void InputGradientKernel(const T* x, const G* dy, const float* gamma,
                                    const float* mean, const float* rstd,
                                    int64_t d, G* dx) {
  __shared__ double shared[kRowThreads];
  const int64_t r = blockIdx.x;
  const float m = mean[r], s = rstd[r];
  double sum_g = 0, sum_gx = 0;
  for (int64_t j = threadIdx.x; j < d; j += kRowThreads) {
    const float x_hat = (ToFloat(x[r * d + j]) - m) * s;
    const float g = ToFloat(dy[r * d + j]) * gamma[j];
    sum_g += g;
    sum_gx += static_cast<double>(g) * x_hat;
  }
  const float a =
      static_cast<float>(cuda::BlockSum<kRowThreads>(sum_g, shared) / d);
  const float c =
      static_cast<float>(cuda::BlockSum<kRowThreads>(sum_gx, shared) / d);
  for (int64_t j = threadIdx.x; j < d; j += kRowThreads) {
    const float x_hat = (ToFloat(x[r * d + j]) - m) * s;
    dx[r * d + j] =
        FromFloat<G>(s * (ToFloat(dy[r * d + j]) * gamma[j] - a - x_hat * c));
  }
}

template <typename T, typename G>
__global__ void ParameterGradientKernel(const T* x, const G* dy,
                                        const float* mean, const float* rstd,
                                        int64_t rows, int64_t d, float* dgamma,
                                        float* dbeta) {
  RINGLET_FOR_EACH_ELEMENT(j, d) {
    double sum_dy = 0, sum_dyx = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const float x_hat = (ToFloat(x[r * d + j]) - mean[r]) * rstd[r];
      const float g = ToFloat(dy[r * d + j]);
      sum_dy += g;
      sum_dyx += static_cast<double>(g) * x_hat;
    }
    dbeta[j] = static_cast<float>(sum_dy);
    dgamma[j] = static_cast<float>(sum_dyx);
  }
}

Tensor LayerNormForwardCuda(const Tensor& x_any, const Tensor& gamma,
                            const Tensor& beta, float eps,
                            LayerNormCache* cache) {
  OnDevice on(x_any);
  const Tensor x = x_any.ToMemoryFormat(MemoryFormat::kContiguous);
  const int64_t d = gamma.numel(), rows = d > 0 ? x.numel() / d : 0;
  if (rows > std::numeric_limits<int>::max()) {
    throw ShapeError("layer_norm on " + ToString(x.device()) + ": " +
                     std::to_string(rows) + " rows; a GPU takes at most " +
                     std::to_string(std::numeric_limits<int>::max()));
  }
  Tensor y = OutputLike(x, x.dtype());
  Tensor mean = Tensor::Uninitialized({rows}, x.device());
  Tensor rstd = Tensor::Uninitialized({rows}, x.device());
  if (rows > 0) {
    WithElementType(x.dtype(), [&](auto t) {
      using T = decltype(t);
      ForwardKernel<T>
          <<<static_cast<unsigned>(rows), kRowThreads, 0, on.stream()>>>(
              static_cast<const T*>(x.raw_data()), gamma.device_data(),
              beta.device_data(), d, eps, static_cast<T*>(y.raw_data()),
              mean.device_data(), rstd.device_data());
    });
    RINGLET_CUDA_CHECK(cudaGetLastError());
  }
  if (cache != nullptr) {
    cache->input = x;
    cache->mean = mean;
    cache->rstd = rstd;
  }
  return y;
}

LayerNormGrads LayerNormBackwardCuda(const Tensor& dy_any, const Tensor& gamma,
                                     const LayerNormCache& cache) {
  const Tensor& x = cache.input;
  OnDevice on(x);
  const Tensor dy = dy_any.ToMemoryFormat(MemoryFormat::kContiguous);
  const int64_t d = gamma.numel(), rows = d > 0 ? x.numel() / d : 0;
  LayerNormGrads out;
  out.dx = OutputLike(dy, dy.dtype());
  out.dgamma = Tensor({d}, x.device());
  out.dbeta = Tensor({d}, x.device());
  if (rows == 0) return out;
  WithElementType(x.dtype(), [&](auto t) {
    using T = decltype(t);
    WithElementType(dy.dtype(), [&](auto g) {
      using G = decltype(g);
      InputGradientKernel<T, G>
          <<<static_cast<unsigned>(rows), kRowThreads, 0, on.stream()>>>(
              static_cast<const T*>(x.raw_data()),
              static_cast<const G*>(dy.raw_data()), gamma.device_data(),
              cache.mean.device_data(), cache.rstd.device_data(), d,
              static_cast<G*>(out.dx.raw_data()));
      ParameterGradientKernel<T, G>
          <<<ElementwiseBlocks(d), kElementwiseThreads, 0, on.stream()>>>(
              static_cast<const T*>(x.raw_data()),
              static_cast<const G*>(dy.raw_data()), cache.mean.device_data(),
              cache.rstd.device_data(), rows, d, out.dgamma.device_data(),
              out.dbeta.device_data());
    });
  });
  RINGLET_CUDA_CHECK(cudaGetLastError());
  return out;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::layer_norm_forward, DeviceType::kCuda,
                        LayerNormForwardCuda);
RINGLET_REGISTER_KERNEL(kernels::layer_norm_backward, DeviceType::kCuda,
                        LayerNormBackwardCuda);

}  // namespace ringlet::nn::cuda_ops
