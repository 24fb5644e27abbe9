// Losses over a Shard's targets: what a training step of a Module minimises
// (ModuleBody, DataParallel), each SUMMED over the shard's samples; the
// engine takes the mean over the step's.
#ifndef RINGLET_PARALLEL_LOSSES_H_
#define RINGLET_PARALLEL_LOSSES_H_

#include <functional>

#include "data/shard.h"
#include "nn/ops/loss.h"
#include "nn/tensor.h"

namespace ringlet::parallel {

// The caller's loss on one shard: `output` is the model's output for the
// shard's samples (on the replica's device). Returns the loss SUMMED over
// those samples, its gradient with respect to `output`, and the count of
// correct predictions (0 where that means nothing), as a PendingLoss
// (PendingLoss::Ready for a loss computed at once). Called on the
// replica's thread.
using LossFunction = std::function<nn::PendingLoss(const nn::Tensor& output,
                                                   const data::Shard& shard)>;

// The softmax cross-entropy against the shard's targets, one int32 class id a
// sample (the default; other targets are refused, naming them); with
// label smoothing in [0, 1) when given.
LossFunction SoftmaxCrossEntropyLoss(float label_smoothing = 0);
// Mean squared error against float32 targets with as many values a sample
// as the model's output (a regression's).
LossFunction MeanSquaredErrorLoss();
// Binary cross-entropy with logits against float32 targets in [0, 1], as
// many a sample as the output (multi-label: multi-hot vectors); a sample
// counts as right when every output is on its target's side of 0.
LossFunction BinaryCrossEntropyWithLogitsLoss();

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_LOSSES_H_
