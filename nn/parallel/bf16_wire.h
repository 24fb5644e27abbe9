// Gradients on the wire in bfloat16 (DDP's bf16_compress_hook): a bucket is
// cast once to bfloat16, rounding to nearest even, summed across replicas
// (each step in float32, rounded once: collectives/api/types.h), and cast
// back to the float32 gradients. Half the bytes of float32 on the wire.
#ifndef RINGLET_NN_PARALLEL_BF16_WIRE_H_
#define RINGLET_NN_PARALLEL_BF16_WIRE_H_

#include <vector>

#include "collectives/api/types.h"
#include "nn/device.h"
#include "nn/dtype.h"  // FloatToBf16, Bf16ToFloat: the casts.

namespace ringlet::nn {

// Throws std::invalid_argument unless `wire` is float32, or bfloat16 with
// every device a CPU (the GPU casts are not written).
void CheckGradWire(collectives::DataType wire,
                   const std::vector<Device>& devices);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_PARALLEL_BF16_WIRE_H_
