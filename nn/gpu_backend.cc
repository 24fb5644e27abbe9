#include "nn/gpu_backend.h"

#include <atomic>
#include <string>

namespace ringlet::nn {
namespace {

std::atomic<GpuBackend*>& Registered() {
  static std::atomic<GpuBackend*> backend{nullptr};
  return backend;
}

}  // namespace

GpuBackend* RegisteredGpuBackend() { return Registered().load(); }

void RegisterGpuBackend(GpuBackend* backend) { Registered().store(backend); }

GpuBackend& GpuBackendFor(Device device) {
  GpuBackend* backend = RegisteredGpuBackend();
  if (backend == nullptr) {
    throw DeviceError(ToString(device) +
                      " needs CUDA, which this build of nn does not have (no "
                      "CUDA toolkit was found, or --config=cpu_only); use a "
                      "CPU device, or rebuild where CUDA is installed");
  }
  return *backend;
}

}  // namespace ringlet::nn
