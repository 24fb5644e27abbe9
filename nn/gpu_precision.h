// How float32 convolutions and matrix products run on GPUs:
//   fp32  FMA math, no TF32 (the default): results within float32 rounding
//         of the CPU path, what the tests compare against.
//   tf32  tensor cores with TF32 inputs (10-bit mantissa), as PyTorch's
//         allow_tf32: faster on Ampere and later, less exact.
// Part of the calling thread's ComputeOptions (nn/compute_options.h); each
// convolution shape keeps the algorithm chosen for it under each setting.
// CPU devices always compute in float32.
#ifndef RINGLET_NN_GPU_PRECISION_H_
#define RINGLET_NN_GPU_PRECISION_H_

#include <string>

namespace ringlet::nn {

enum class GpuPrecision { kFp32, kTf32 };

// The calling thread's (ComputeOptions::gpu_precision).
GpuPrecision gpu_precision();

// "fp32" or "tf32"; throws std::invalid_argument naming the choices.
GpuPrecision ParseGpuPrecision(const std::string& name);
const char* Name(GpuPrecision precision);

// How cuDNN's convolution algorithms are chosen, once per shape and
// device (the first time a shape runs):
//   measure        cuDNN runs every candidate and the fastest is kept
//                  (PyTorch's cudnn.benchmark = True).
//   heuristic      cuDNN's heuristics choose, nothing is run.
//   deterministic  the first candidate of cuDNN's heuristics that cuDNN
//                  marks deterministic, nothing timed (the same bits from
//                  run to run), as PyTorch's cudnn.deterministic = True
//                  with cudnn.benchmark = False.
//   graph          cuDNN's graph API: its heuristics' engines, the fastest
//                  kept (the engines PyTorch 2 runs); the legacy API's
//                  measured choice where it offers none.
// Measured choices may differ between runs (timings are noisy); results
// stay within float32 rounding of each other.
enum class ConvAlgorithms { kMeasure, kHeuristic, kDeterministic, kGraph };

// The calling thread's (ComputeOptions::conv_algorithms).
ConvAlgorithms conv_algorithms();
// "measure", "heuristic", "deterministic" or "graph"; throws
// std::invalid_argument naming the choices.
ConvAlgorithms ParseConvAlgorithms(const std::string& name);
// As ParseConvAlgorithms, and "auto": the faster choice on an H100 for the
// operands' type (docs/results.md, "GPU"): graph for bfloat16 convolutions
// (the legacy API's bfloat16 step is 1.5x slower at batch 256), measure
// for float32 and TF32 (graph's fp32 step is 1.4x slower).
ConvAlgorithms ResolveConvAlgorithms(const std::string& name, bool bf16);
const char* Name(ConvAlgorithms choice);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_GPU_PRECISION_H_
