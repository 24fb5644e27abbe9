#include "nn/ops/batch_norm.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "nn/ops/cuda/cuda_ops.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/parallel.h"

namespace ringlet::nn {
namespace {

// Row sums in double with four running sums, so the adds do not wait on one
// another (one chain of dependent double adds was most of batch norm's time).
double SumRow(const float* in, int64_t n) {
  double s[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    for (int l = 0; l < 4; ++l) s[l] += in[j + l];
  }
  for (; j < n; ++j) s[0] += in[j];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

double SumSquaredDeviations(const float* in, int64_t n, double mean) {
  double s[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    for (int l = 0; l < 4; ++l) s[l] += (in[j + l] - mean) * (in[j + l] - mean);
  }
  for (; j < n; ++j) s[0] += (in[j] - mean) * (in[j] - mean);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

double SumProducts(const float* a, const float* b, int64_t n) {
  double s[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    for (int l = 0; l < 4; ++l) s[l] += a[j + l] * b[j + l];
  }
  for (; j < n; ++j) s[0] += a[j] * b[j];
  return (s[0] + s[1]) + (s[2] + s[3]);
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
  ParallelFor(channels, [&](int64_t begin, int64_t end, int) {
    for (int64_t ch = begin; ch < end; ++ch) fn(ch);
  });
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
  CheckParams("batchnorm2d", x, gamma, beta);
  if (OpDevice("batchnorm2d",
               {&x, &gamma, &beta, &stats->running_mean, &stats->running_var})
          .is_cuda()) {
    return cuda_ops::BatchNorm2dTrainForward(x, gamma, beta, stats, cache,
                                             replica_sum);
  }
  const int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  // Per-channel sums in double (a channel holds up to millions of values),
  // the count last; summed across replicas when synchronised.
  std::vector<double> sums(c + 1, 0.0);
  ForEachChannel(c, x.numel(), [&](int64_t ch) {
    for (int64_t i = 0; i < n; ++i) {
      sums[ch] += SumRow(x.data() + (i * c + ch) * hw, hw);
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
      sq[ch] +=
          SumSquaredDeviations(x.data() + (i * c + ch) * hw, hw, mean[ch]);
    }
  });
  if (replica_sum) replica_sum(sq.data(), c);

  Tensor y = Tensor::Uninitialized(x.shape());
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
      for (int64_t j = 0; j < hw; ++j) {
        const float xh = (x.data()[base + j] - mu) * inv_std;
        cache->x_hat.data()[base + j] = xh;
        y.data()[base + j] = g * xh + b;
      }
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
  if (OpDevice("batchnorm2d",
               {&x, &gamma, &beta, &stats.running_mean, &stats.running_var})
          .is_cuda()) {
    return cuda_ops::BatchNorm2dEvalForward(x, gamma, beta, stats);
  }
  const int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  Tensor y = Tensor::Uninitialized(x.shape());
  for (int64_t ch = 0; ch < c; ++ch) {
    const float scale =
        gamma.data()[ch] / std::sqrt(stats.running_var.data()[ch] + stats.eps);
    const float shift = beta.data()[ch] - stats.running_mean.data()[ch] * scale;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t base = (i * c + ch) * hw;
      for (int64_t j = 0; j < hw; ++j) {
        y.data()[base + j] = x.data()[base + j] * scale + shift;
      }
    }
  }
  return y;
}

BatchNormGrads BatchNorm2dBackward(const Tensor& dy, const Tensor& gamma,
                                   const BatchNormCache& cache,
                                   const ReplicaSum& replica_sum) {
  if (OpDevice("batchnorm2d backward", {&dy, &gamma}).is_cuda()) {
    return cuda_ops::BatchNorm2dBackward(dy, gamma, cache, replica_sum);
  }
  RequireCpu("batchnorm2d backward", {&dy, &gamma, &cache.x_hat});
  ExpectShape("batchnorm2d backward", "output gradient", dy,
              cache.x_hat.shape());
  const int64_t n = dy.dim(0), c = dy.dim(1), hw = dy.dim(2) * dy.dim(3);
  // sum(dy) per channel, then sum(dy x_hat): this replica's, then the batch's.
  std::vector<double> sums(2 * c, 0.0);
  ForEachChannel(c, dy.numel(), [&](int64_t ch) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t base = (i * c + ch) * hw;
      sums[ch] += SumRow(dy.data() + base, hw);
      sums[c + ch] +=
          SumProducts(dy.data() + base, cache.x_hat.data() + base, hw);
    }
  });
  BatchNormGrads g;
  g.dx = Tensor::Uninitialized(dy.shape());
  g.dgamma = Tensor({c});
  g.dbeta = Tensor({c});
  for (int64_t ch = 0; ch < c; ++ch) {
    g.dbeta.data()[ch] = static_cast<float>(sums[ch]);
    g.dgamma.data()[ch] = static_cast<float>(sums[c + ch]);
  }
  if (replica_sum) replica_sum(sums.data(), 2 * c);
  const double m = static_cast<double>(cache.count);
  ForEachChannel(c, dy.numel(), [&](int64_t ch) {
    // dx = gamma inv_std (dy - mean(dy) - x_hat mean(dy x_hat))
    const float k = gamma.data()[ch] * cache.inv_std.data()[ch];
    const float mean_dy = static_cast<float>(sums[ch] / m);
    const float mean_dy_xh = static_cast<float>(sums[c + ch] / m);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t base = (i * c + ch) * hw;
      for (int64_t j = 0; j < hw; ++j) {
        g.dx.data()[base + j] = k * (dy.data()[base + j] - mean_dy -
                                     cache.x_hat.data()[base + j] * mean_dy_xh);
      }
    }
  });
  return g;
}

}  // namespace ringlet::nn
