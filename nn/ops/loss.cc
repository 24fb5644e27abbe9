#include "nn/ops/loss.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/gpu_ops.h"

namespace ringlet::nn {
namespace {

LossResult CpuSoftmaxCrossEntropy(const Tensor& logits, const int32_t* labels,
                                  Reduction reduction) {
  const int64_t n = logits.dim(0), k = logits.dim(1);
  LossResult result;
  result.dlogits = Tensor::Uninitialized(logits.shape());
  const float scale = reduction == Reduction::kMean && n > 0 ? 1.0f / n : 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t label = labels[i];
    if (label < 0 || label >= k) {
      throw ShapeError("softmax_cross_entropy: label " + std::to_string(label) +
                       " of row " + std::to_string(i) + " is outside [0, " +
                       std::to_string(k) + ")");
    }
    const float* row = logits.data() + i * k;
    float* grad = result.dlogits.data() + i * k;
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j) best = row[j] > row[best] ? j : best;
    result.correct += best == label;
    // Shift by the max so exp never overflows.
    const float max = row[best];
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(row[j] - max);
    const double log_sum = std::log(sum);
    result.loss += log_sum - (row[label] - max);
    for (int64_t j = 0; j < k; ++j) {
      const double p = std::exp(row[j] - max - log_sum);
      grad[j] = static_cast<float>(p - (j == label ? 1.0 : 0.0)) * scale;
    }
  }
  if (reduction == Reduction::kMean && n > 0) result.loss /= n;
  return result;
}

}  // namespace

LossResult SoftmaxCrossEntropy(const Tensor& logits, const int32_t* labels,
                               Reduction reduction) {
  return StartSoftmaxCrossEntropy(logits, labels, reduction).Finish();
}

PendingLoss StartSoftmaxCrossEntropy(const Tensor& logits,
                                     const int32_t* labels,
                                     Reduction reduction) {
  ExpectShape("softmax_cross_entropy", "logits", logits, {-1, -1});
  if (logits.dtype() == DType::kBFloat16) {
    // In float32, the gradient too (autocast.h).
    return StartSoftmaxCrossEntropy(AsDType(logits, DType::kFloat32), labels,
                                    reduction);
  }
  PendingLoss pending;
  const Device device = OpDevice("softmax_cross_entropy", {&logits});
  if (device.is_cuda()) {
    GpuOpsFor(device).QueueSoftmaxCrossEntropy(logits, labels, reduction,
                                               &pending.result_.dlogits,
                                               &pending.row_results_);
    pending.rows_ = logits.dim(0);
    pending.mean_ = reduction == Reduction::kMean;
    pending.pending_ = true;
    return pending;
  }
  pending.result_ = CpuSoftmaxCrossEntropy(logits, labels, reduction);
  return pending;
}

PendingLoss PendingLoss::Ready(LossResult result) {
  PendingLoss ready;
  ready.result_ = std::move(result);
  return ready;
}

LossResult PendingLoss::Finish() {
  if (!pending_) return result_;
  pending_ = false;
  const int64_t n = rows_;
  if (n == 0) return result_;
  // One copy back (the host's one wait): losses as doubles, then counts.
  std::vector<float> host(3 * n);
  CopyToHost(row_results_, host.data());
  std::vector<double> losses(n);
  std::vector<int32_t> correct(n);
  std::memcpy(losses.data(), host.data(), n * sizeof(double));
  std::memcpy(correct.data(), host.data() + 2 * n, n * sizeof(int32_t));
  for (int64_t i = 0; i < n; ++i) {
    result_.loss += losses[i];
    result_.correct += correct[i];
  }
  if (mean_) result_.loss /= n;
  row_results_ = Tensor();
  return result_;
}

}  // namespace ringlet::nn
