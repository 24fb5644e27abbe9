// The optimizers by name: each registers itself from its own file
// (RINGLET_REGISTER_OPTIMIZER), and MakeOptimizer, the trainers'
// --optimizer, its help and its hyperparameters' defaults read the
// registry. Adding an optimizer touches its own files and BUILD only.
#ifndef RINGLET_NN_OPTIM_REGISTRY_H_
#define RINGLET_NN_OPTIM_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/optim/optimizer.h"

namespace ringlet::nn {

struct OptimizerSpec {
  std::string name;     // "lion"
  std::string summary;  // --optimizer's help: "lion (Chen et al. 2023)"
  // The settings of OptimizerOptions it reads beyond lr and weight_decay
  // ("momentum", "beta1", "beta2", "eps"), each with its own default.
  std::vector<std::pair<std::string, float>> reads;
  // The rate a trainer takes when --lr is left out, and whose it is
  // ("torch's default for adam"); 0: the trainer's own (the chapters' SGD).
  float default_lr = 0;
  std::string default_lr_source;
  // What its weight decay does, for --weight_decay's help.
  std::string weight_decay;
  // Its own checks beyond the shared ranges (may be null); throws
  // std::invalid_argument.
  std::function<void(const OptimizerOptions&)> check;
  std::function<std::unique_ptr<Optimizer>(const OptimizerOptions&,
                                           std::vector<Tensor*> values,
                                           std::vector<std::string> names)>
      make;
};

// Registers `spec` (a later one of the same name replaces it: a test's).
bool RegisterOptimizer(OptimizerSpec spec);
// The spec named `name`; std::invalid_argument naming the registered ones.
const OptimizerSpec& FindOptimizer(const std::string& name);
// Every registered spec, by name.
std::vector<const OptimizerSpec*> RegisteredOptimizers();
// Whether `spec` reads the setting `setting` ("beta2"), and its default.
bool Reads(const OptimizerSpec& spec, const std::string& setting,
           float* default_value = nullptr);

}  // namespace ringlet::nn

// In the optimizer's own .cc file, at namespace scope.
#define RINGLET_REGISTER_OPTIMIZER(spec)                                   \
  [[maybe_unused]] static const bool ringlet_optimizer_registered_##spec = \
      ::ringlet::nn::RegisterOptimizer(spec())

#endif  // RINGLET_NN_OPTIM_REGISTRY_H_
