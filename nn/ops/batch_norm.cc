#include "nn/ops/batch_norm.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/gpu_ops.h"
#include "nn/ops/op_threads.h"
#include "nn/ops/row_sums.h"

namespace ringlet::nn {
namespace {

using row_sums::SumProducts;
using row_sums::SumSquaredDeviations;

// The element-wise rows take their pointers as locals, restrict-qualified:
// read through a lambda's captures they were reloaded every element and the
// loops did not vectorise (batch norm was 6% of a ResNet-18 step).
void NormalizeRow(const float* __restrict x, int64_t n, float mu, float inv_std,
                  float gamma, float beta, float* __restrict x_hat,
                  float* __restrict y) {
  for (int64_t j = 0; j < n; ++j) {
    const float xh = (x[j] - mu) * inv_std;
    x_hat[j] = xh;
    y[j] = gamma * xh + beta;
  }
}

void ScaleShiftRow(const float* __restrict x, int64_t n, float scale,
                   float shift, float* __restrict y) {
  for (int64_t j = 0; j < n; ++j) y[j] = x[j] * scale + shift;
}

// dx = gamma inv_std (dy - mean(dy) - x_hat mean(dy x_hat)), k = gamma
// inv_std.
void InputGradientRow(const float* __restrict dy, const float* __restrict x_hat,
                      int64_t n, float k, float mean_dy, float mean_dy_xh,
                      float* __restrict dx) {
  for (int64_t j = 0; j < n; ++j) {
    dx[j] = k * (dy[j] - mean_dy - x_hat[j] * mean_dy_xh);
  }
}

// Batch norm reads and writes bfloat16 activations a row at a time, each
// row widened into (or rounded from) a float32 scratch row of the thread:
// the same values as converting the whole tensor first, without a float32
// copy of it (the conversions were a tenth of a bfloat16 ResNet-18 step).
std::vector<float>& ScratchRow(int which, int64_t n) {
  thread_local std::vector<float> rows[3];
  rows[which].resize(n);
  return rows[which];
}
const float* InRow(const Tensor& t, int64_t base, int64_t n, int which) {
  if (t.dtype() == DType::kFloat32) return t.data() + base;
  std::vector<float>& row = ScratchRow(which, n);
  Bf16ToFloat(t.bf16_data() + base, row.data(), n);
  return row.data();
}
float* OutRow(Tensor& t, int64_t base, int64_t n) {
  return t.dtype() == DType::kFloat32 ? t.data() + base
                                      : ScratchRow(2, n).data();
}
void FinishRow(Tensor& t, int64_t base, int64_t n) {
  if (t.dtype() == DType::kBFloat16) {
    FloatToBf16(ScratchRow(2, n).data(), t.bf16_data() + base, n);
  }
}

// A CPU op's device for an activation of either type and float32
// parameters and statistics.
Device ActivationAndParams(const char* op, const Tensor& activation,
                           std::initializer_list<const Tensor*> params) {
  return CommonDevice(op, {activation.device(), OpDevice(op, params)});
}

// Runs fn(ch) for every channel, channels split over the op's threads when
// the tensor is large enough to pay for them. Each channel is computed
// whole by one thread, so results do not depend on the thread count.
void ForEachChannel(int64_t channels, int64_t values,
                    const std::function<void(int64_t)>& fn) {
  constexpr int64_t kMinValuesForThreads = int64_t{1} << 16;
  if (values < kMinValuesForThreads) {
    for (int64_t ch = 0; ch < channels; ++ch) fn(ch);
    return;
  }
  ParallelForEachItem(channels, [&](int64_t ch, int) { fn(ch); });
}

void CheckParams(const char* op, const Tensor& x, const Tensor& gamma,
                 const Tensor& beta) {
  ExpectShape(op, "input", x, {-1, -1, -1, -1});
  ExpectShape(op, "gamma", gamma, {x.dim(1)});
  ExpectShape(op, "beta", beta, {x.dim(1)});
}

}  // namespace

Tensor BatchNorm2dTrainForward(const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, BatchNormStats* stats,
                               BatchNormCache* cache,
                               const ReplicaSum& replica_sum) {
  if (x.dtype() == DType::kBFloat16 && x.device().is_cuda() && replica_sum) {
    // In the input's type, statistics in float32 (autocast.h); synchronised
    // batch norm's kernels are float32's.
    return AsDType(BatchNorm2dTrainForward(AsDType(x, DType::kFloat32), gamma,
                                           beta, stats, cache, replica_sum),
                   DType::kBFloat16);
  }
  CheckParams("batchnorm2d", x, gamma, beta);
  const Device device = ActivationAndParams(
      "batchnorm2d", x,
      {&gamma, &beta, &stats->running_mean, &stats->running_var});
  if (device.is_cuda()) {
    return GpuOpsFor(device).BatchNorm2dTrainForward(x, gamma, beta, stats,
                                                     cache, replica_sum);
  }
  const int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  // Per-channel sums in double (a channel holds up to millions of values),
  // the count last; summed across replicas when synchronised.
  std::vector<double> sums(c + 1, 0.0);
  ForEachChannel(c, x.numel(), [&](int64_t ch) {
    for (int64_t i = 0; i < n; ++i) {
      sums[ch] += row_sums::Sum(InRow(x, (i * c + ch) * hw, hw, 0), hw);
    }
  });
  sums[c] = static_cast<double>(n * hw);
  if (replica_sum) replica_sum(sums.data(), c + 1);
  const int64_t m = static_cast<int64_t>(sums[c]);  // Values per channel.
  if (m < 2) {
    throw ShapeError(
        "batchnorm2d: training needs more than one value per "
        "channel, got input " +
        ToString(x.shape()) +
        (replica_sum ? " (" + std::to_string(m) + " across replicas)" : ""));
  }
  // Squared deviations from the batch-wide mean: the two-pass variance.
  std::vector<double> mean(c), sq(c, 0.0);
  ForEachChannel(c, x.numel(), [&](int64_t ch) {
    mean[ch] = sums[ch] / m;
    for (int64_t i = 0; i < n; ++i) {
      sq[ch] += SumSquaredDeviations(InRow(x, (i * c + ch) * hw, hw, 0), hw,
                                     mean[ch]);
    }
  });
  if (replica_sum) replica_sum(sq.data(), c);

  Tensor y = Tensor::Uninitialized(x.shape(), Device::Cpu(), x.dtype());
  cache->x_hat = Tensor::Uninitialized(x.shape());
  cache->inv_std = Tensor({c});
  cache->count = m;
  ForEachChannel(c, x.numel(), [&](int64_t ch) {
    const double var = sq[ch] / m;
    const float inv_std = static_cast<float>(1.0 / std::sqrt(var + stats->eps));
    cache->inv_std.data()[ch] = inv_std;
    const float g = gamma.data()[ch], b = beta.data()[ch];
    const float mu = static_cast<float>(mean[ch]);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t base = (i * c + ch) * hw;
      NormalizeRow(InRow(x, base, hw, 0), hw, mu, inv_std, g, b,
                   cache->x_hat.data() + base, OutRow(y, base, hw));
      FinishRow(y, base, hw);
    }
    const float mo = stats->momentum;
    float& rm = stats->running_mean.data()[ch];
    float& rv = stats->running_var.data()[ch];
    rm = (1 - mo) * rm + mo * mu;
    rv = (1 - mo) * rv + mo * static_cast<float>(sq[ch] / (m - 1));
  });
  return y;
}

Tensor BatchNorm2dEvalForward(const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const BatchNormStats& stats) {
  CheckParams("batchnorm2d", x, gamma, beta);
  const Device device = ActivationAndParams(
      "batchnorm2d", x,
      {&gamma, &beta, &stats.running_mean, &stats.running_var});
  if (device.is_cuda()) {
    return GpuOpsFor(device).BatchNorm2dEvalForward(x, gamma, beta, stats);
  }
  const int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  Tensor y = Tensor::Uninitialized(x.shape(), Device::Cpu(), x.dtype());
  for (int64_t ch = 0; ch < c; ++ch) {
    const float scale =
        gamma.data()[ch] / std::sqrt(stats.running_var.data()[ch] + stats.eps);
    const float shift = beta.data()[ch] - stats.running_mean.data()[ch] * scale;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t base = (i * c + ch) * hw;
      ScaleShiftRow(InRow(x, base, hw, 0), hw, scale, shift,
                    OutRow(y, base, hw));
      FinishRow(y, base, hw);
    }
  }
  return y;
}

BatchNormGrads BatchNorm2dBackward(const Tensor& dy, const Tensor& gamma,
                                   const BatchNormCache& cache,
                                   const ReplicaSum& replica_sum) {
  // dx in the type of the input (the output gradient's), dgamma and dbeta
  // in float32.
  if (dy.dtype() == DType::kBFloat16 && dy.device().is_cuda() && replica_sum) {
    BatchNormGrads g = BatchNorm2dBackward(AsDType(dy, DType::kFloat32), gamma,
                                           cache, replica_sum);
    g.dx = AsDType(g.dx, DType::kBFloat16);
    return g;
  }
  const Device device =
      ActivationAndParams("batchnorm2d backward", dy, {&gamma});
  if (device.is_cuda()) {
    return GpuOpsFor(device).BatchNorm2dBackward(dy, gamma, cache, replica_sum);
  }
  RequireCpu("batchnorm2d backward", {&gamma, &cache.x_hat});
  ExpectShape("batchnorm2d backward", "output gradient", dy,
              cache.x_hat.shape());
  const int64_t n = dy.dim(0), c = dy.dim(1), hw = dy.dim(2) * dy.dim(3);
  // sum(dy) per channel, then sum(dy x_hat): this replica's, then the batch's.
  std::vector<double> sums(2 * c, 0.0);
  ForEachChannel(c, dy.numel(), [&](int64_t ch) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t base = (i * c + ch) * hw;
      const float* dy_row = InRow(dy, base, hw, 0);
      sums[ch] += row_sums::Sum(dy_row, hw);
      sums[c + ch] += SumProducts(dy_row, cache.x_hat.data() + base, hw);
    }
  });
  BatchNormGrads g;
  g.dx = Tensor::Uninitialized(dy.shape(), Device::Cpu(), dy.dtype());
  g.dgamma = Tensor({c});
  g.dbeta = Tensor({c});
  for (int64_t ch = 0; ch < c; ++ch) {
    g.dbeta.data()[ch] = static_cast<float>(sums[ch]);
    g.dgamma.data()[ch] = static_cast<float>(sums[c + ch]);
  }
  if (replica_sum) replica_sum(sums.data(), 2 * c);
  const double m = static_cast<double>(cache.count);
  ForEachChannel(c, dy.numel(), [&](int64_t ch) {
    const float k = gamma.data()[ch] * cache.inv_std.data()[ch];
    const float mean_dy = static_cast<float>(sums[ch] / m);
    const float mean_dy_xh = static_cast<float>(sums[c + ch] / m);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t base = (i * c + ch) * hw;
      InputGradientRow(InRow(dy, base, hw, 0), cache.x_hat.data() + base, hw, k,
                       mean_dy, mean_dy_xh, OutRow(g.dx, base, hw));
      FinishRow(g.dx, base, hw);
    }
  });
  return g;
}

}  // namespace ringlet::nn
