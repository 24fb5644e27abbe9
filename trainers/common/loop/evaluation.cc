#include "trainers/common/loop/evaluation.h"

#include <vector>

#include "data/batch_loader.h"
#include "trainers/common/outputs/progress.h"

namespace ringlet::trainers {

SplitEvaluation EvaluateSplit(parallel::ReplicaEngine& engine,
                              const data::DatasetPtr& split, int64_t batch_size,
                              int64_t classes, ProgressBar* progress) {
  const parallel::CountMetric counts = classes > 0
                                           ? parallel::ConfusionCounts(classes)
                                           : parallel::CountMetric{};
  data::LoaderOptions options;
  options.batch_size = batch_size;
  options.shuffle = false;
  options.layout = engine.EvalLayout();
  data::BatchLoader loader(split, options);
  loader.StartEpoch(0);
  data::Batch batch;
  int64_t correct = 0, seen = 0;
  std::vector<double> sums(counts.size, 0.0);
  while (loader.Next(&batch)) {
    const parallel::EvalStats stats =
        engine.Evaluate(batch.Local(), nullptr, counts);
    correct += stats.correct;
    for (size_t i = 0; i < sums.size(); ++i) sums[i] += stats.counts[i];
    seen += batch.size;
    if (progress != nullptr) progress->Update(seen);
  }
  if (progress != nullptr) progress->Finish();
  SplitEvaluation result;
  result.images = seen;
  result.accuracy = seen > 0 ? static_cast<double>(correct) / seen : 0.0;
  if (classes > 0) result.confusion = parallel::ConfusionOf(classes, sums);
  return result;
}

double EvaluateAccuracy(parallel::ReplicaEngine& engine,
                        const data::DatasetPtr& split, int64_t batch_size,
                        ProgressBar* progress) {
  return EvaluateSplit(engine, split, batch_size, 0, progress).accuracy;
}

}  // namespace ringlet::trainers
