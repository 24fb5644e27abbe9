// Layer normalisation on CPU devices: rows split over the op threads (each
// row is independent), gamma's and beta's gradients summed per column over
// the rows in order, so no result depends on the thread count.
#include "nn/ops/layer_norm.h"

#include <cmath>
#include <cstdint>

#include "nn/ops/autocast.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

constexpr int64_t kRowGrain = 16;

Tensor LayerNormForwardCpu(const Tensor& x_any, const Tensor& gamma,
                           const Tensor& beta, float eps,
                           LayerNormCache* cache) {
  const Tensor x = AsDType(x_any, DType::kFloat32);
  const int64_t d = gamma.numel(), rows = d > 0 ? x.numel() / d : 0;
  Tensor y = Tensor::Uninitialized(x.shape());
  Tensor mean = Tensor::Uninitialized({rows});
  Tensor rstd = Tensor::Uninitialized({rows});
  const float* in = x.data();
  const float* g = gamma.data();
  const float* b = beta.data();
  float* out = y.data();
  ParallelForElements(rows, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = in + r * d;
      double sum = 0;
      for (int64_t j = 0; j < d; ++j) sum += row[j];
      const double mu = sum / d;
      double sq = 0;
      for (int64_t j = 0; j < d; ++j) sq += (row[j] - mu) * (row[j] - mu);
      const float m = static_cast<float>(mu);
      const float s = static_cast<float>(1.0 / std::sqrt(sq / d + eps));
      mean.data()[r] = m;
      rstd.data()[r] = s;
      for (int64_t j = 0; j < d; ++j) {
        out[r * d + j] = (row[j] - m) * s * g[j] + b[j];
      }
    }
  });
  if (cache != nullptr) {
    cache->input = x_any;
    cache->mean = mean;
    cache->rstd = rstd;
  }
  return AsDType(y, x_any.dtype());
}

LayerNormGrads LayerNormBackwardCpu(const Tensor& dy_any, const Tensor& gamma,
                                    const LayerNormCache& cache) {
  const Tensor x = AsDType(cache.input, DType::kFloat32);
  const Tensor dy = AsDType(dy_any, DType::kFloat32);
  const int64_t d = gamma.numel(), rows = d > 0 ? x.numel() / d : 0;
  const float* in = x.data();
  const float* grad = dy.data();
  const float* g = gamma.data();
  const float* mean = cache.mean.data();
  const float* rstd = cache.rstd.data();
  LayerNormGrads out;
  Tensor dx = Tensor::Uninitialized(x.shape());
  float* dxs = dx.data();
  ParallelForElements(rows, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = in + r * d;
      const float* dyr = grad + r * d;
      // dx = rstd (g - mean(g) - x_hat mean(g x_hat)), g = dy gamma.
      double sum_g = 0, sum_gx = 0;
      for (int64_t j = 0; j < d; ++j) {
        const float x_hat = (row[j] - mean[r]) * rstd[r];
        const float gj = dyr[j] * g[j];
        sum_g += gj;
        sum_gx += static_cast<double>(gj) * x_hat;
      }
      const float a = static_cast<float>(sum_g / d);
      const float c = static_cast<float>(sum_gx / d);
      for (int64_t j = 0; j < d; ++j) {
        const float x_hat = (row[j] - mean[r]) * rstd[r];
        dxs[r * d + j] = rstd[r] * (dyr[j] * g[j] - a - x_hat * c);
      }
    }
  });
  out.dx = AsDType(dx, dy_any.dtype());
  out.dgamma = Tensor::Uninitialized({d});
  out.dbeta = Tensor::Uninitialized({d});
  float* dgamma = out.dgamma.data();
  float* dbeta = out.dbeta.data();
  ParallelForElements(d, 1, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      double sum_dy = 0, sum_dyx = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const float x_hat = (in[r * d + j] - mean[r]) * rstd[r];
        sum_dy += grad[r * d + j];
        sum_dyx += static_cast<double>(grad[r * d + j]) * x_hat;
      }
      dbeta[j] = static_cast<float>(sum_dy);
      dgamma[j] = static_cast<float>(sum_dyx);
    }
  });
  return out;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::layer_norm_forward, DeviceType::kCpu,
                        LayerNormForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::layer_norm_backward, DeviceType::kCpu,
                        LayerNormBackwardCpu);

}  // namespace ringlet::nn
