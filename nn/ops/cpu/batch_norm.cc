// Batch normalisation on CPU devices, float32 and bfloat16 activations
// (float32 statistics), the epilogue in the same passes over memory.
#include "nn/ops/batch_norm.h"

#include <cmath>
#include <string>
#include <vector>

#include "nn/ops/batch_norm_rows.h"
#include "nn/ops/row_sums.h"

namespace ringlet::nn {
namespace {

using batch_norm_rows::ChannelSums;
using batch_norm_rows::EpilogueRow;
using batch_norm_rows::FinishRow;
using batch_norm_rows::ForEachRowRun;
using batch_norm_rows::GradientRow;
using batch_norm_rows::InputGradientRow;
using batch_norm_rows::InRow;
using batch_norm_rows::kGradRow;
using batch_norm_rows::kInputRow;
using batch_norm_rows::kXHatRow;
using batch_norm_rows::NormalizedRow;
using batch_norm_rows::NormalizeRow;
using batch_norm_rows::OutRow;
using batch_norm_rows::ScaleShiftRow;
using batch_norm_rows::ScratchRow;
using row_sums::SumProducts;
using row_sums::SumSquaredDeviations;

// The epilogue in the normalisation's passes: with a residual (if any) of
// the input's type; else the separate ops after it.
bool Fused(const Tensor& x, const BatchNormEpilogue& epilogue) {
  return !epilogue.residual.defined() || epilogue.residual.dtype() == x.dtype();
}

// The output pass, in memory order: row(in, n, channel, out) maps each
// float32 input row to float32 outputs, then the epilogue, then y's type.
template <typename RowFn>
void WriteOutput(const Tensor& x, const BatchNormEpilogue& epilogue, Tensor& y,
                 RowFn row) {
  const int64_t c = x.dim(1), hw = x.dim(2) * x.dim(3);
  ForEachRowRun(x.shape(), [&](int64_t first, int64_t rows) {
    const int64_t base = first * hw, count = rows * hw;
    const float* in = InRow(x, base, count, kInputRow);
    float* out = OutRow(y, base, count);
    for (int64_t r = 0; r < rows; ++r) {
      row(in + r * hw, hw, (first + r) % c, out + r * hw);
    }
    EpilogueRow(epilogue, y, base, count, out);
    FinishRow(y, base, count);
  });
}

Tensor TrainForwardCpu(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                       BatchNormStats* stats, BatchNormCache* cache,
                       const ReplicaSum& replica_sum,
                       const BatchNormEpilogue& epilogue) {
  if (!Fused(x, epilogue)) {
    return ApplyBatchNormEpilogue(
        TrainForwardCpu(x, gamma, beta, stats, cache, replica_sum, {}),
        epilogue, cache);
  }
  const int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  // Per-channel sums in double (a channel holds up to millions of values),
  // the count last; summed across replicas when synchronised.
  std::vector<double> sums =
      ChannelSums(x.shape(), 1, [&](int64_t first, int64_t rows, double* out) {
        const float* in = InRow(x, first * hw, rows * hw, kInputRow);
        for (int64_t r = 0; r < rows; ++r) {
          out[r] = row_sums::Sum(in + r * hw, hw);
        }
      });
  sums.push_back(static_cast<double>(n * hw));
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
  std::vector<double> mean(c);
  for (int64_t ch = 0; ch < c; ++ch) mean[ch] = sums[ch] / m;
  std::vector<double> sq =
      ChannelSums(x.shape(), 1, [&](int64_t first, int64_t rows, double* out) {
        const float* in = InRow(x, first * hw, rows * hw, kInputRow);
        for (int64_t r = 0; r < rows; ++r) {
          out[r] = SumSquaredDeviations(in + r * hw, hw, mean[(first + r) % c]);
        }
      });
  if (replica_sum) replica_sum(sq.data(), c);

  Tensor y = Tensor::Uninitialized(x.shape(), Device::Cpu(), x.dtype());
  cache->input = x;
  cache->mean = Tensor({c});
  cache->inv_std = Tensor({c});
  cache->count = m;
  cache->eps = stats->eps;
  cache->relu_output = epilogue.relu ? y : Tensor();
  cache->added_residual = epilogue.residual.defined();
  float* mus = cache->mean.data();
  float* inv_stds = cache->inv_std.data();
  for (int64_t ch = 0; ch < c; ++ch) {
    const double var = sq[ch] / m;
    inv_stds[ch] = static_cast<float>(1.0 / std::sqrt(var + stats->eps));
    mus[ch] = static_cast<float>(mean[ch]);
    const float mo = stats->momentum;
    float& rm = stats->running_mean.data()[ch];
    float& rv = stats->running_var.data()[ch];
    rm = (1 - mo) * rm + mo * mus[ch];
    rv = (1 - mo) * rv + mo * static_cast<float>(sq[ch] / (m - 1));
  }
  WriteOutput(x, epilogue, y,
              [&](const float* in, int64_t n, int64_t ch, float* out) {
                NormalizeRow(in, n, mus[ch], inv_stds[ch], gamma.data()[ch],
                             beta.data()[ch], out);
              });
  return y;
}

Tensor EvalForwardCpu(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                      const BatchNormStats& stats,
                      const BatchNormEpilogue& epilogue) {
  if (!Fused(x, epilogue)) {
    return ApplyBatchNormEpilogue(EvalForwardCpu(x, gamma, beta, stats, {}),
                                  epilogue, nullptr);
  }
  const int64_t c = x.dim(1);
  Tensor y = Tensor::Uninitialized(x.shape(), Device::Cpu(), x.dtype());
  std::vector<float> scale(c), shift(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    scale[ch] =
        gamma.data()[ch] / std::sqrt(stats.running_var.data()[ch] + stats.eps);
    shift[ch] = beta.data()[ch] - stats.running_mean.data()[ch] * scale[ch];
  }
  WriteOutput(x, epilogue, y,
              [&](const float* in, int64_t n, int64_t ch, float* out) {
                ScaleShiftRow(in, n, scale[ch], shift[ch], out);
              });
  return y;
}

BatchNormGrads BackwardCpu(const Tensor& dy, const Tensor& gamma,
                           const BatchNormCache& cache,
                           const ReplicaSum& replica_sum) {
  const Tensor& relu_output = cache.relu_output;
  const int64_t c = dy.dim(1), hw = dy.dim(2) * dy.dim(3);
  BatchNormGrads g;
  // The residual's gradient is dy through the ReLU, written once in the
  // pass that sums it and read back by the next; without a ReLU it is dy
  // itself. Without a residual the mask is applied again in the second
  // pass: a masked copy would cost an activation's memory for a few
  // percent of this backward's time.
  Tensor masked;
  if (cache.added_residual && relu_output.defined()) {
    masked = Tensor::Uninitialized(dy.shape(), Device::Cpu(), dy.dtype());
  }
  if (cache.added_residual) g.d_residual = masked.defined() ? masked : dy;
  // sum(dy) per channel, then sum(dy x_hat): this replica's, then the batch's.
  std::vector<double> sums =
      ChannelSums(dy.shape(), 2, [&](int64_t first, int64_t rows, double* out) {
        const int64_t base = first * hw, count = rows * hw;
        const float* grad = GradientRow(dy, relu_output, base, count,
                                        masked.defined() ? &masked : nullptr);
        const float* in = InRow(cache.input, base, count, kInputRow);
        float* x_hat = ScratchRow(kXHatRow, hw);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t ch = (first + r) % c;
          NormalizedRow(in + r * hw, hw, cache.mean.data()[ch],
                        cache.inv_std.data()[ch], x_hat);
          out[2 * r] = row_sums::Sum(grad + r * hw, hw);
          out[2 * r + 1] = SumProducts(grad + r * hw, x_hat, hw);
        }
      });
  g.dx = Tensor::Uninitialized(dy.shape(), Device::Cpu(), dy.dtype());
  g.dgamma = Tensor({c});
  g.dbeta = Tensor({c});
  for (int64_t ch = 0; ch < c; ++ch) {
    g.dbeta.data()[ch] = static_cast<float>(sums[ch]);
    g.dgamma.data()[ch] = static_cast<float>(sums[c + ch]);
  }
  if (replica_sum) replica_sum(sums.data(), 2 * c);
  const double m = static_cast<double>(cache.count);
  std::vector<float> k(c), mean_dy(c), mean_dy_xh(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    k[ch] = gamma.data()[ch] * cache.inv_std.data()[ch];
    mean_dy[ch] = static_cast<float>(sums[ch] / m);
    mean_dy_xh[ch] = static_cast<float>(sums[c + ch] / m);
  }
  ForEachRowRun(dy.shape(), [&](int64_t first, int64_t rows) {
    const int64_t base = first * hw, count = rows * hw;
    // The masked gradient once more: read back where it was written.
    const float* grad =
        masked.defined() ? InRow(masked, base, count, kGradRow)
                         : GradientRow(dy, relu_output, base, count, nullptr);
    const float* in = InRow(cache.input, base, count, kInputRow);
    float* x_hat = ScratchRow(kXHatRow, hw);
    float* out = OutRow(g.dx, base, count);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t ch = (first + r) % c;
      NormalizedRow(in + r * hw, hw, cache.mean.data()[ch],
                    cache.inv_std.data()[ch], x_hat);
      InputGradientRow(grad + r * hw, x_hat, hw, k[ch], mean_dy[ch],
                       mean_dy_xh[ch], out + r * hw);
    }
    FinishRow(g.dx, base, count);
  });
  return g;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::batch_norm2d_train_forward, DeviceType::kCpu,
                        TrainForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::batch_norm2d_eval_forward, DeviceType::kCpu,
                        EvalForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::batch_norm2d_backward, DeviceType::kCpu,
                        BackwardCpu);

}  // namespace ringlet::nn
