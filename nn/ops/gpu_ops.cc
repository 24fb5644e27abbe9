#include "nn/ops/gpu_ops.h"

#include <atomic>

namespace ringlet::nn {
namespace {

std::atomic<GpuOps*>& Registered() {
  static std::atomic<GpuOps*> ops{nullptr};
  return ops;
}

}  // namespace

void RegisterGpuOps(GpuOps* ops) { Registered().store(ops); }

GpuOps& GpuOpsFor(Device device) {
  GpuOps* ops = Registered().load();
  if (ops == nullptr) {
    throw DeviceError(ToString(device) +
                      ": nn's GPU ops are not in this build (no CUDA toolkit "
                      "was found, or --config=cpu_only); use a CPU device, or "
                      "rebuild where CUDA is installed");
  }
  return *ops;
}

}  // namespace ringlet::nn
