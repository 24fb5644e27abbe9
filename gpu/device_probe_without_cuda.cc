// ProbeCudaDevices() for builds without CUDA: there is nothing to ask.
#include "gpu/device_probe.h"

namespace ringlet::gpu {

namespace {
constexpr char kWithoutCuda[] =
    "ringlet was built without CUDA (no toolkit at $CUDA_PATH, or "
    "--config=cpu_only)";
}  // namespace

CudaDeviceReport ProbeCudaDevices() {
  CudaDeviceReport report;
  report.reason = kWithoutCuda;
  return report;
}

int CountCudaDevices(std::string* reason) {
  if (reason != nullptr) *reason = kWithoutCuda;
  return 0;
}

}  // namespace ringlet::gpu
