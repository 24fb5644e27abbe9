// Gradients on the wire in bfloat16 (DDP's bf16_compress_hook): a bucket is
// cast once to bfloat16, rounding to nearest even, summed across replicas
// (each step in float32, rounded once: collectives/api/types.h), and cast
// back to the float32 gradients (ConvertElements, nn/tensor.h: a kernel on
// a GPU). Half the bytes of float32 on the wire.
#ifndef RINGLET_NN_PARALLEL_BF16_WIRE_H_
#define RINGLET_NN_PARALLEL_BF16_WIRE_H_

#include "collectives/api/types.h"

namespace ringlet::nn {

// Throws std::invalid_argument unless `wire` is float32 or bfloat16.
void CheckGradWire(collectives::DataType wire);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_PARALLEL_BF16_WIRE_H_
