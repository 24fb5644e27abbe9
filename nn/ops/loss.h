// Softmax cross-entropy over logits [N, K] and int32 labels in [0, K), with
// the mean over the batch (d2l's concise chapter) or the sum (from scratch).
#ifndef RINGLET_NN_OPS_LOSS_H_
#define RINGLET_NN_OPS_LOSS_H_

#include <cstdint>

#include "nn/tensor.h"

namespace ringlet::nn {

enum class Reduction { kMean, kSum };

struct LossResult {
  double loss = 0;      // Reduced over the batch.
  Tensor dlogits;       // d loss / d logits, [N, K].
  int64_t correct = 0;  // Rows whose largest logit is the label's.
};

// Throws ShapeError for a label outside [0, K).
LossResult SoftmaxCrossEntropy(const Tensor& logits, const int32_t* labels,
                               Reduction reduction);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_LOSS_H_
