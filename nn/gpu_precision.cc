#include "nn/gpu_precision.h"

#include <atomic>
#include <stdexcept>

namespace ringlet::nn {
namespace {

std::atomic<GpuPrecision>& Setting() {
  static std::atomic<GpuPrecision> setting{GpuPrecision::kFp32};
  return setting;
}

}  // namespace

void SetGpuPrecision(GpuPrecision precision) { Setting() = precision; }

GpuPrecision gpu_precision() { return Setting(); }

GpuPrecision ParseGpuPrecision(const std::string& name) {
  if (name == "fp32") return GpuPrecision::kFp32;
  if (name == "tf32") return GpuPrecision::kTf32;
  throw std::invalid_argument("unknown GPU precision '" + name +
                              "'; use fp32 or tf32");
}

const char* Name(GpuPrecision precision) {
  return precision == GpuPrecision::kTf32 ? "tf32" : "fp32";
}

}  // namespace ringlet::nn
