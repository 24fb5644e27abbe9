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

// The same in two halves, so a training step on a GPU waits for the device
// once, at its end: Start queues the loss and its gradient and returns at
// once (dlogits is ready for backward, in the device's queue); Finish
// waits and gives the loss and the count, the same values as
// SoftmaxCrossEntropy. On a CPU, Start computes everything.
class PendingLoss {
 public:
  PendingLoss() = default;
  // A loss computed already (a caller's own loss): Finish returns it.
  static PendingLoss Ready(LossResult result);
  const Tensor& dlogits() const { return result_.dlogits; }
  Tensor& dlogits() { return result_.dlogits; }
  // Once; the result (dlogits included).
  LossResult Finish();

 private:
  friend PendingLoss StartSoftmaxCrossEntropy(const Tensor&, const int32_t*,
                                              Reduction);
  LossResult result_;
  // On a GPU: each row's loss (doubles) then correctness (int32s) in
  // device memory, summed on the host by Finish.
  Tensor row_results_;
  int64_t rows_ = 0;
  bool mean_ = false;
  bool pending_ = false;
};

// Throws ShapeError for a label outside [0, K) (checked on the host, at
// once).
PendingLoss StartSoftmaxCrossEntropy(const Tensor& logits,
                                     const int32_t* labels,
                                     Reduction reduction);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_LOSS_H_
