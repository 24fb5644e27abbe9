// How float32 convolutions and matrix products run on GPUs:
//   fp32  FMA math, no TF32 (the default): results within float32 rounding
//         of the CPU path, what the tests compare against.
//   tf32  tensor cores with TF32 inputs (10-bit mantissa), as PyTorch's
//         allow_tf32: faster on Ampere and later, less exact.
// One setting per process, chosen before the first GPU op (each
// convolution shape keeps the algorithm chosen for it). CPU devices always
// compute in float32.
#ifndef RINGLET_NN_GPU_PRECISION_H_
#define RINGLET_NN_GPU_PRECISION_H_

#include <string>

namespace ringlet::nn {

enum class GpuPrecision { kFp32, kTf32 };

void SetGpuPrecision(GpuPrecision precision);
GpuPrecision gpu_precision();

// "fp32" or "tf32"; throws std::invalid_argument naming the choices.
GpuPrecision ParseGpuPrecision(const std::string& name);
const char* Name(GpuPrecision precision);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_GPU_PRECISION_H_
