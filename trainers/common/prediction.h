// --predict: a trained model (--params_in) run on inputs of one's own, its
// class probabilities written as CSV, one row a sample.
#ifndef RINGLET_TRAINERS_COMMON_PREDICTION_H_
#define RINGLET_TRAINERS_COMMON_PREDICTION_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "parallel/replica_engine.h"

namespace ringlet::trainers {

struct PredictionOptions {
  int64_t batch_size = 256;
  // Names for the probability columns, one per output; numbers otherwise.
  std::vector<std::string> class_names;
  bool terminal = false;  // Progress as a bar.
  // Each sample's name (its file), written as a column after the index
  // when given.
  std::vector<std::string> sample_names;
};

// Runs `engine`'s model in evaluation mode over `inputs` (their targets
// unused) and writes "index,[file,]class,probability,p_<name>,..." with the
// softmax of each sample's outputs, the class its largest; returns the
// number of samples. Throws std::invalid_argument for outputs that are not
// one row of class scores per sample.
int64_t WritePredictions(parallel::ReplicaEngine& engine,
                         const data::DatasetPtr& inputs,
                         const PredictionOptions& options, std::ostream& csv,
                         std::ostream& progress);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_PREDICTION_H_
