// The answers without a registered probe are the CPU-only build's: zero
// GPUs, and why.
#include "gpu/device_probe.h"

#include <atomic>

namespace ringlet::gpu {
namespace {

constexpr char kWithoutCuda[] =
    "ringlet was built without CUDA (no toolkit at $CUDA_PATH, or "
    "--config=cpu_only)";

std::atomic<const CudaDeviceProbe*>& Registered() {
  static std::atomic<const CudaDeviceProbe*> probe{nullptr};
  return probe;
}

}  // namespace

void RegisterCudaDeviceProbe(const CudaDeviceProbe* probe) {
  Registered().store(probe);
}

CudaDeviceReport ProbeCudaDevices() {
  if (const CudaDeviceProbe* probe = Registered().load()) {
    return probe->probe();
  }
  CudaDeviceReport report;
  report.reason = kWithoutCuda;
  return report;
}

int CountCudaDevices(std::string* reason) {
  if (const CudaDeviceProbe* probe = Registered().load()) {
    return probe->count(reason);
  }
  if (reason != nullptr) *reason = kWithoutCuda;
  return 0;
}

}  // namespace ringlet::gpu
