#include "nn/ops/cpu_conv_backend.h"

#include <atomic>
#include <cstdlib>
#include <stdexcept>

namespace ringlet::nn {
namespace {

CpuConvBackend FromEnvironment() {
  const char* value = std::getenv("RINGLET_CPU_CONV");
  if (value == nullptr || *value == '\0') return CpuConvBackend::kOneDnn;
  try {
    return ParseCpuConvBackend(value);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("RINGLET_CPU_CONV: ") + e.what());
  }
}

std::atomic<CpuConvBackend>& Current() {
  static std::atomic<CpuConvBackend> backend{FromEnvironment()};
  return backend;
}

}  // namespace

CpuConvBackend ParseCpuConvBackend(const std::string& name) {
  if (name == "onednn") return CpuConvBackend::kOneDnn;
  if (name == "eigen") return CpuConvBackend::kEigen;
  throw std::invalid_argument("unknown CPU convolution '" + name +
                              "'; use onednn or eigen");
}

const char* CpuConvBackendName(CpuConvBackend backend) {
  return backend == CpuConvBackend::kOneDnn ? "onednn" : "eigen";
}

CpuConvBackend GetCpuConvBackend() { return Current().load(); }

void SetCpuConvBackend(CpuConvBackend backend) { Current().store(backend); }

}  // namespace ringlet::nn
