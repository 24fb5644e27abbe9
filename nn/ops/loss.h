// Losses over a batch's outputs [N, ...]: softmax cross-entropy against
// int32 class ids (d2l's; also with label smoothing), mean squared error
// against float targets, binary cross-entropy with logits against
// multi-hot (or any [0, 1]) targets. Each reduces with the mean over the
// batch (d2l's concise chapter) or the sum (from scratch); a sample's own
// loss is the mean over its elements, as PyTorch's losses with their
// default reduction give it.
#ifndef RINGLET_NN_OPS_LOSS_H_
#define RINGLET_NN_OPS_LOSS_H_

#include <cstdint>

#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

enum class Reduction { kMean, kSum };

struct LossResult {
  double loss = 0;  // Reduced over the batch.
  Tensor dlogits;   // d loss / d logits, [N, K].
  // Rows whose largest logit is the label's (softmax cross-entropy); rows
  // whose every logit is on its target's side of 0 (binary cross-entropy);
  // 0 for mean squared error.
  int64_t correct = 0;
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
  // A loss queued on a device: `dlogits` [N, K] in its queue, and
  // `row_results` n doubles (each row's loss) then n int32s (1 where the
  // row's prediction is right), as 3n floats of storage, summed by Finish.
  static PendingLoss Queued(Tensor dlogits, Tensor row_results, bool mean);
  const Tensor& dlogits() const { return result_.dlogits; }
  Tensor& dlogits() { return result_.dlogits; }
  // Once; the result (dlogits included).
  LossResult Finish();

 private:
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

// With label smoothing s in [0, 1) (PyTorch's label_smoothing): the target
// is (1 - s) on the label and s / K on every class. s = 0 is the plain
// loss above. On a GPU, s > 0 is computed on the host (one wait).
LossResult SoftmaxCrossEntropy(const Tensor& logits, const int32_t* labels,
                               Reduction reduction, float label_smoothing);

// (output - target)^2 averaged over each sample's elements; `targets` holds
// output.numel() floats in host memory. On a GPU the output is read to the
// host and the gradient written back (one wait).
LossResult MeanSquaredError(const Tensor& output, const float* targets,
                            Reduction reduction);

// -(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))), computed stably,
// averaged over each sample's elements; targets in [0, 1] (ShapeError
// otherwise), output.numel() floats in host memory. As MeanSquaredError on
// a GPU.
LossResult BinaryCrossEntropyWithLogits(const Tensor& logits,
                                        const float* targets,
                                        Reduction reduction);

// Implementations per device type (kernel_table.h), given float32 logits
// [N, K]; labels are in host memory (a kernel checks them on the host).
namespace kernels {
inline KernelTable<PendingLoss(const Tensor& logits, const int32_t* labels,
                               Reduction reduction)>
    softmax_cross_entropy{"softmax_cross_entropy"};
}  // namespace kernels

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_LOSS_H_
