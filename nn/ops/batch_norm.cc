#include "nn/ops/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/ops/activation.h"
#include "nn/ops/autocast.h"
#include "nn/ops/batch_norm_rows.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/gpu_ops.h"
#include "nn/ops/op_threads.h"
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

// A CPU op's device for activations of either type and float32
// parameters and statistics.
Device ActivationAndParams(const char* op, const Tensor& activation,
                           const Tensor& other_activation,
                           std::initializer_list<const Tensor*> params) {
  return CommonDevice(op,
                      {OpDeviceOfAnyType(op, {&activation, &other_activation}),
                       OpDevice(op, params)});
}

void CheckParams(const char* op, const Tensor& x, const Tensor& gamma,
                 const Tensor& beta, const BatchNormEpilogue& epilogue) {
  ExpectShape(op, "input", x, {-1, -1, -1, -1});
  ExpectShape(op, "gamma", gamma, {x.dim(1)});
  ExpectShape(op, "beta", beta, {x.dim(1)});
  if (epilogue.residual.defined()) {
    ExpectShape(op, "residual", epilogue.residual, x.shape());
  }
}

// The epilogue in the CPU's passes: on CPU devices, with a residual (if
// any) of the input's type. Otherwise the separate ops run after the
// normalisation (GPUs; a residual of another type).
bool FusedOnCpu(const Tensor& x, const BatchNormEpilogue& epilogue) {
  return !x.device().is_cuda() && (!epilogue.residual.defined() ||
                                   (!epilogue.residual.device().is_cuda() &&
                                    epilogue.residual.dtype() == x.dtype()));
}

// The epilogue after the normalisation: on a GPU one pass over y, in
// place (y is the op's fresh output), with a residual of y's type; else
// the separate ops. The same values either way.
Tensor SeparateEpilogue(Tensor y, const BatchNormEpilogue& epilogue) {
  const Tensor& residual = epilogue.residual;
  if (!residual.defined() && !epilogue.relu) return y;
  if (y.device().is_cuda() &&
      (!residual.defined() || residual.dtype() == y.dtype())) {
    GpuOpsFor(y.device()).AddReluInPlace(y, residual, epilogue.relu);
    return y;
  }
  if (residual.defined()) y = Add(y, residual);
  if (epilogue.relu) y = ReluForward(y);
  return y;
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

Tensor TrainForwardOnGpu(const Tensor& x, const Tensor& gamma,
                         const Tensor& beta, BatchNormStats* stats,
                         BatchNormCache* cache, const ReplicaSum& replica_sum) {
  if (x.dtype() == DType::kBFloat16 && replica_sum) {
    // In the input's type, statistics in float32 (autocast.h); synchronised
    // batch norm's kernels are float32's.
    return AsDType(TrainForwardOnGpu(AsDType(x, DType::kFloat32), gamma, beta,
                                     stats, cache, replica_sum),
                   DType::kBFloat16);
  }
  return GpuOpsFor(x.device())
      .BatchNorm2dTrainForward(x, gamma, beta, stats, cache, replica_sum);
}

BatchNormGrads BackwardOnGpu(const Tensor& dy, const Tensor& gamma,
                             const BatchNormCache& cache,
                             const ReplicaSum& replica_sum) {
  if (dy.dtype() == DType::kBFloat16 && replica_sum) {
    BatchNormGrads g =
        BackwardOnGpu(AsDType(dy, DType::kFloat32), gamma, cache, replica_sum);
    g.dx = AsDType(g.dx, DType::kBFloat16);
    return g;
  }
  return GpuOpsFor(dy.device())
      .BatchNorm2dBackward(dy, gamma, cache, replica_sum);
}

}  // namespace

Tensor BatchNorm2dTrainForward(const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, BatchNormStats* stats,
                               BatchNormCache* cache,
                               const ReplicaSum& replica_sum,
                               const BatchNormEpilogue& epilogue) {
  CheckParams("batchnorm2d", x, gamma, beta, epilogue);
  const Device device = ActivationAndParams(
      "batchnorm2d", x, epilogue.residual,
      {&gamma, &beta, &stats->running_mean, &stats->running_var});
  if (!FusedOnCpu(x, epilogue)) {
    const Tensor y = SeparateEpilogue(
        device.is_cuda()
            ? TrainForwardOnGpu(x, gamma, beta, stats, cache, replica_sum)
            : BatchNorm2dTrainForward(x, gamma, beta, stats, cache,
                                      replica_sum),
        epilogue);
    cache->relu_output = epilogue.relu ? y : Tensor();
    cache->added_residual = epilogue.residual.defined();
    return y;
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

Tensor BatchNorm2dEvalForward(const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const BatchNormStats& stats,
                              const BatchNormEpilogue& epilogue) {
  CheckParams("batchnorm2d", x, gamma, beta, epilogue);
  const Device device = ActivationAndParams(
      "batchnorm2d", x, epilogue.residual,
      {&gamma, &beta, &stats.running_mean, &stats.running_var});
  if (!FusedOnCpu(x, epilogue)) {
    return SeparateEpilogue(
        device.is_cuda()
            ? GpuOpsFor(device).BatchNorm2dEvalForward(x, gamma, beta, stats)
            : BatchNorm2dEvalForward(x, gamma, beta, stats),
        epilogue);
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

BatchNormGrads BatchNorm2dBackward(const Tensor& dy, const Tensor& gamma,
                                   const BatchNormCache& cache,
                                   const ReplicaSum& replica_sum) {
  if (!cache.filled()) {
    throw std::invalid_argument(
        "batchnorm2d backward: the cache is empty; run a training-mode "
        "forward pass first");
  }
  // dx and the residual's gradient in the type of the output gradient,
  // dgamma and dbeta in float32.
  const Device device =
      ActivationAndParams("batchnorm2d backward", dy, cache.input, {&gamma});
  if (device.is_cuda()) {
    const Tensor g =
        cache.relu_output.defined() ? ReluBackward(cache.relu_output, dy) : dy;
    BatchNormGrads grads = BackwardOnGpu(g, gamma, cache, replica_sum);
    if (cache.added_residual) grads.d_residual = g;
    return grads;
  }
  ExpectShape("batchnorm2d backward", "output gradient", dy,
              cache.input.shape());
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

}  // namespace ringlet::nn
