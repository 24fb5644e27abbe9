#include "nn/gpu_precision.h"

#include <stdexcept>

#include "nn/compute_options.h"

namespace ringlet::nn {

GpuPrecision gpu_precision() { return CurrentComputeOptions().gpu_precision; }

GpuPrecision ParseGpuPrecision(const std::string& name) {
  if (name == "fp32") return GpuPrecision::kFp32;
  if (name == "tf32") return GpuPrecision::kTf32;
  throw std::invalid_argument("unknown GPU precision '" + name +
                              "'; use fp32 or tf32");
}

const char* Name(GpuPrecision precision) {
  return precision == GpuPrecision::kTf32 ? "tf32" : "fp32";
}

ConvAlgorithms conv_algorithms() {
  return CurrentComputeOptions().conv_algorithms;
}

ConvAlgorithms ParseConvAlgorithms(const std::string& name) {
  if (name == "measure") return ConvAlgorithms::kMeasure;
  if (name == "heuristic") return ConvAlgorithms::kHeuristic;
  if (name == "deterministic") return ConvAlgorithms::kDeterministic;
  if (name == "graph") return ConvAlgorithms::kGraph;
  throw std::invalid_argument(
      "unknown convolution algorithm choice '" + name +
      "'; use measure, heuristic, deterministic or graph");
}

ConvAlgorithms ResolveConvAlgorithms(const std::string& name, bool bf16) {
  if (name == "auto") {
    return bf16 ? ConvAlgorithms::kGraph : ConvAlgorithms::kMeasure;
  }
  return ParseConvAlgorithms(name);
}

const char* Name(ConvAlgorithms choice) {
  switch (choice) {
    case ConvAlgorithms::kHeuristic:
      return "heuristic";
    case ConvAlgorithms::kDeterministic:
      return "deterministic";
    case ConvAlgorithms::kGraph:
      return "graph";
    case ConvAlgorithms::kMeasure:
      break;
  }
  return "measure";
}

}  // namespace ringlet::nn
