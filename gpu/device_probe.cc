// The answers without a registered probe are the CPU-only build's: zero
// GPUs, and why.
#include "gpu/device_probe.h"

#include "gpu/registration.h"

namespace ringlet::gpu {
namespace {

constexpr char kWithoutCuda[] =
    "ringlet was built without CUDA (no toolkit at $CUDA_PATH, or "
    "--config=cpu_only)";

gpu::Registration<const CudaDeviceProbe*> registered;

}  // namespace

void RegisterCudaDeviceProbe(const CudaDeviceProbe* probe) {
  registered.Set(probe);
}

CudaDeviceReport ProbeCudaDevices() {
  if (const CudaDeviceProbe* probe = registered.Get()) {
    return probe->probe();
  }
  CudaDeviceReport report;
  report.reason = kWithoutCuda;
  return report;
}

int CountCudaDevices(std::string* reason) {
  if (const CudaDeviceProbe* probe = registered.Get()) {
    return probe->count(reason);
  }
  if (reason != nullptr) *reason = kWithoutCuda;
  return 0;
}

}  // namespace ringlet::gpu
