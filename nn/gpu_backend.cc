#include "nn/gpu_backend.h"

#include <string>

#include "gpu/registration.h"

namespace ringlet::nn {
namespace {

gpu::Registration<GpuBackend*> registered;

}  // namespace

GpuBackend* RegisteredGpuBackend() { return registered.Get(); }

void RegisterGpuBackend(GpuBackend* backend) { registered.Set(backend); }

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
