// A classifier's confusion matrix over an evaluation: how many samples of
// each true class were predicted as each class, counted on every device
// and summed over the job through ReplicaEngine::Evaluate's CountMetric.
// A prediction is the logits' first maximum, as the losses count correct
// ones, so the diagonal's sum is Evaluate's `correct`.
//
//   const parallel::CountMetric counts = parallel::ConfusionCounts(10);
//   std::vector<double> sums(counts.size, 0.0);
//   for (each batch) {
//     const parallel::EvalStats s = dp.Evaluate(batch.Local(), nullptr,
//                                               counts);
//     for (size_t i = 0; i < sums.size(); ++i) sums[i] += s.counts[i];
//   }
//   const parallel::ConfusionMatrix m = parallel::ConfusionOf(10, sums);
#ifndef RINGLET_PARALLEL_CONFUSION_H_
#define RINGLET_PARALLEL_CONFUSION_H_

#include <cstdint>
#include <vector>

#include "parallel/replica_engine.h"

namespace ringlet::parallel {

// The most classes a confusion matrix counts (16.7 million cells).
inline constexpr int64_t kMaxConfusionClasses = 4096;

struct ConfusionMatrix {
  int64_t classes = 0;
  // classes x classes, row-major: counts[truth * classes + predicted].
  std::vector<int64_t> counts;

  int64_t at(int64_t truth, int64_t predicted) const {
    return counts[truth * classes + predicted];
  }
  // Samples counted, and those on the diagonal.
  int64_t total() const;
  int64_t correct() const;
  // Per true class, the share predicted right (recall); -1 for a class
  // with no samples.
  std::vector<double> PerClassAccuracy() const;
};

// The CountMetric of a classifier with `classes` outputs ([n, classes]
// logits) and one class id a sample (uint8, int32 or int64 targets:
// data::ClassIds). Throws std::invalid_argument for classes outside [1,
// kMaxConfusionClasses]; its `add` throws std::invalid_argument for
// another output shape or a class id outside [0, classes).
CountMetric ConfusionCounts(int64_t classes);

// The matrix from ConfusionCounts' sums (EvalStats::counts, added over
// batches). Throws std::invalid_argument unless sums.size() is classes^2.
ConfusionMatrix ConfusionOf(int64_t classes, const std::vector<double>& sums);

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_CONFUSION_H_
