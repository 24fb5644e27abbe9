// Evaluation over a whole split (d2l's evaluate_accuracy_gpus): batches
// in order, each split across the devices, counted over the job; for a
// classifier also its confusion matrix (parallel/confusion.h).
#ifndef RINGLET_TRAINERS_COMMON_LOOP_EVALUATION_H_
#define RINGLET_TRAINERS_COMMON_LOOP_EVALUATION_H_

#include <cstdint>

#include "data/dataset.h"
#include "parallel/confusion.h"
#include "parallel/replica_engine.h"

namespace ringlet::trainers {

class ProgressBar;

struct SplitEvaluation {
  double accuracy = 0;
  int64_t images = 0;
  // Counted when `classes` was above 0; classes == 0 otherwise.
  parallel::ConfusionMatrix confusion;
};

// `split` in batches of `batch_size`; with classes > 0 (the model's
// outputs, one per class) also the confusion matrix. `progress`, when
// given, is updated and finished.
SplitEvaluation EvaluateSplit(parallel::ReplicaEngine& engine,
                              const data::DatasetPtr& split, int64_t batch_size,
                              int64_t classes = 0,
                              ProgressBar* progress = nullptr);

// EvaluateSplit's accuracy alone.
double EvaluateAccuracy(parallel::ReplicaEngine& engine,
                        const data::DatasetPtr& split, int64_t batch_size,
                        ProgressBar* progress = nullptr);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_LOOP_EVALUATION_H_
