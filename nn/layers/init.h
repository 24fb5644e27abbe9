// Parameter initialisation from a seeded generator: d2l's normal(0, 0.01)
// for weights (the chapters' init_weights) and zeros for biases, or
// Kaiming (He) normal as an option.
#ifndef RINGLET_NN_LAYERS_INIT_H_
#define RINGLET_NN_LAYERS_INIT_H_

#include <cstdint>
#include <random>

#include "nn/layers/module.h"

namespace ringlet::nn {

enum class InitScheme { kNormal001, kKaimingNormal };

// Initialises every parameter whose name ends in "weight" of a conv or
// linear layer (rank 2 or 4) with the scheme, biases with zeros; batch norm
// gamma and beta (rank 1, named "gamma"/"beta") keep 1 and 0.
void InitParameters(Module& module, InitScheme scheme, uint64_t seed);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_LAYERS_INIT_H_
