// Gradients on the wire in bfloat16 (DDP's bf16_compress_hook): a bucket is
// cast once to bfloat16, rounding to nearest even, summed across replicas
// (each step in float32, rounded once: collectives/api/types.h), and cast
// back to the float32 gradients. Half the bytes of float32 on the wire.
#ifndef RINGLET_NN_PARALLEL_BF16_WIRE_H_
#define RINGLET_NN_PARALLEL_BF16_WIRE_H_

#include <cstdint>
#include <vector>

#include "collectives/api/types.h"
#include "nn/device.h"

namespace ringlet::nn {

// Throws std::invalid_argument unless `wire` is float32, or bfloat16 with
// every device a CPU (the GPU casts are not written).
void CheckGradWire(collectives::DataType wire,
                   const std::vector<Device>& devices);

// dst[i] = src[i] rounded to bfloat16's bits, for i < n (host memory).
void CastToBf16(const float* src, uint16_t* dst, int64_t n);
// dst[i] = the float32 value of bfloat16 bits src[i] (exact).
void CastFromBf16(const uint16_t* src, float* dst, int64_t n);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_PARALLEL_BF16_WIRE_H_
