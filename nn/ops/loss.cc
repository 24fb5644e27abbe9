#include "nn/ops/loss.h"

#include <cmath>
#include <string>

#include "nn/ops/cuda/cuda_ops.h"
#include "nn/ops/dispatch.h"

namespace ringlet::nn {

LossResult SoftmaxCrossEntropy(const Tensor& logits, const int32_t* labels,
                               Reduction reduction) {
  ExpectShape("softmax_cross_entropy", "logits", logits, {-1, -1});
  if (OpDevice("softmax_cross_entropy", {&logits}).is_cuda()) {
    return cuda_ops::SoftmaxCrossEntropy(logits, labels, reduction);
  }
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

}  // namespace ringlet::nn
