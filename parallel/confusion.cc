#include "parallel/confusion.h"

#include <stdexcept>
#include <string>

#include "data/shard.h"
#include "nn/device.h"
#include "nn/ops/autocast.h"

namespace ringlet::parallel {

int64_t ConfusionMatrix::total() const {
  int64_t sum = 0;
  for (int64_t c : counts) sum += c;
  return sum;
}

int64_t ConfusionMatrix::correct() const {
  int64_t sum = 0;
  for (int64_t k = 0; k < classes; ++k) sum += at(k, k);
  return sum;
}

std::vector<double> ConfusionMatrix::PerClassAccuracy() const {
  std::vector<double> accuracy(classes, -1.0);
  for (int64_t t = 0; t < classes; ++t) {
    int64_t row = 0;
    for (int64_t p = 0; p < classes; ++p) row += at(t, p);
    if (row > 0) accuracy[t] = static_cast<double>(at(t, t)) / row;
  }
  return accuracy;
}

CountMetric ConfusionCounts(int64_t classes) {
  if (classes < 1 || classes > kMaxConfusionClasses) {
    throw std::invalid_argument("confusion matrix: " + std::to_string(classes) +
                                " classes; it counts 1 to " +
                                std::to_string(kMaxConfusionClasses));
  }
  CountMetric metric;
  metric.size = classes * classes;
  metric.add = [classes](const nn::Tensor& output, const data::Shard& shard,
                         double* counts) {
    if (output.rank() != 2 || output.dim(0) != shard.count ||
        output.dim(1) != classes) {
      throw std::invalid_argument(
          "confusion matrix: the model's output has shape " +
          nn::ToString(output.shape()) + ", expected [" +
          std::to_string(shard.count) + ", " + std::to_string(classes) +
          "] (one logit per class)");
    }
    std::vector<int32_t> storage;
    const int32_t* truth = data::ClassIds(shard, "confusion matrix", &storage);
    const nn::Tensor logits =
        nn::AsDType(output, nn::DType::kFloat32).To(nn::Device::Cpu());
    for (int64_t i = 0; i < shard.count; ++i) {
      const float* row = logits.data() + i * classes;
      int64_t best = 0;
      for (int64_t j = 1; j < classes; ++j)
        best = row[j] > row[best] ? j : best;
      if (truth[i] < 0 || truth[i] >= classes) {
        throw std::invalid_argument(
            "confusion matrix: class id " + std::to_string(truth[i]) +
            " is outside [0, " + std::to_string(classes) + ")");
      }
      counts[truth[i] * classes + best] += 1;
    }
  };
  return metric;
}

ConfusionMatrix ConfusionOf(int64_t classes, const std::vector<double>& sums) {
  if (classes < 1 || static_cast<int64_t>(sums.size()) != classes * classes) {
    throw std::invalid_argument(
        "confusion matrix: " + std::to_string(sums.size()) + " counts for " +
        std::to_string(classes) + " classes, expected classes^2");
  }
  ConfusionMatrix m;
  m.classes = classes;
  m.counts.reserve(sums.size());
  for (double v : sums) m.counts.push_back(static_cast<int64_t>(v));
  return m;
}

}  // namespace ringlet::parallel
