#include "parallel/losses.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace ringlet::parallel {

LossFunction SoftmaxCrossEntropyLoss(float label_smoothing) {
  if (label_smoothing == 0) {  // On a GPU, without waiting.
    return [](const nn::Tensor& output, const data::Shard& shard) {
      // The ids are read (uploaded, on a GPU) before the call returns.
      std::vector<int32_t> ids;
      return nn::StartSoftmaxCrossEntropy(
          output, data::ClassIds(shard, "softmax cross-entropy", &ids),
          nn::Reduction::kSum);
    };
  }
  return [label_smoothing](const nn::Tensor& output, const data::Shard& shard) {
    std::vector<int32_t> ids;
    return nn::PendingLoss::Ready(nn::SoftmaxCrossEntropy(
        output, data::ClassIds(shard, "softmax cross-entropy", &ids),
        nn::Reduction::kSum, label_smoothing));
  };
}

namespace {

// The shard's targets as float32, as many a sample as `output` has.
const float* FloatTargets(const nn::Tensor& output, const data::Shard& shard,
                          const char* who) {
  const float* targets = shard.targets.As<float>(who);
  const int64_t per_sample = shard.count > 0 ? output.numel() / shard.count : 0;
  if (shard.count > 0 && shard.targets.elements() != per_sample) {
    throw std::invalid_argument(
        std::string(who) + ": the model gives " + std::to_string(per_sample) +
        " values a sample, the targets are " + shard.targets.Describe());
  }
  return targets;
}

}  // namespace

LossFunction MeanSquaredErrorLoss() {
  return [](const nn::Tensor& output, const data::Shard& shard) {
    return nn::PendingLoss::Ready(nn::MeanSquaredError(
        output, FloatTargets(output, shard, "mean squared error"),
        nn::Reduction::kSum));
  };
}

LossFunction BinaryCrossEntropyWithLogitsLoss() {
  return [](const nn::Tensor& output, const data::Shard& shard) {
    return nn::PendingLoss::Ready(nn::BinaryCrossEntropyWithLogits(
        output, FloatTargets(output, shard, "binary cross-entropy"),
        nn::Reduction::kSum));
  };
}

}  // namespace ringlet::parallel
