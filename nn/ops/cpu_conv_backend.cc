#include "nn/ops/cpu_conv_backend.h"

#include <cstdlib>
#include <stdexcept>

#include "nn/compute_options.h"

namespace ringlet::nn {
namespace {

#ifdef RINGLET_WITHOUT_ONEDNN
constexpr bool kHasOneDnn = false;
#else
constexpr bool kHasOneDnn = true;
#endif

std::invalid_argument NoOneDnn() {
  return std::invalid_argument(
      "CPU convolution 'onednn': this build has no oneDNN (built with "
      "--define=ringlet_onednn=off); use eigen, or build without that "
      "define");
}

CpuConvBackend FromEnvironment() {
  const char* value = std::getenv("RINGLET_CPU_CONV");
  if (value == nullptr || *value == '\0') {
    return kHasOneDnn ? CpuConvBackend::kOneDnn : CpuConvBackend::kEigen;
  }
  try {
    return ParseCpuConvBackend(value);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("RINGLET_CPU_CONV: ") + e.what());
  }
}

CpuConvBackend Default() {
  static const CpuConvBackend backend = FromEnvironment();
  return backend;
}

}  // namespace

bool CpuConvHasOneDnn() { return kHasOneDnn; }

CpuConvBackend ParseCpuConvBackend(const std::string& name) {
  if (name == "onednn") {
    if (!kHasOneDnn) throw NoOneDnn();
    return CpuConvBackend::kOneDnn;
  }
  if (name == "eigen") return CpuConvBackend::kEigen;
  throw std::invalid_argument("unknown CPU convolution '" + name +
                              "'; use onednn or eigen");
}

const char* CpuConvBackendName(CpuConvBackend backend) {
  switch (backend) {
    case CpuConvBackend::kOneDnn:
      return "onednn";
    case CpuConvBackend::kEigen:
      return "eigen";
    case CpuConvBackend::kDefault:
      break;
  }
  return "default";
}

CpuConvBackend GetCpuConvBackend() {
  const CpuConvBackend backend = CurrentComputeOptions().cpu_conv;
  if (backend == CpuConvBackend::kDefault) return Default();
  if (backend == CpuConvBackend::kOneDnn && !kHasOneDnn) throw NoOneDnn();
  return backend;
}

}  // namespace ringlet::nn
