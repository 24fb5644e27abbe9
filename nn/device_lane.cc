#include "nn/device_lane.h"

#include "nn/gpu_backend.h"

namespace ringlet::nn {

DeviceLane::DeviceLane(Device device) : device_(device) {
  if (device.is_cuda()) {
    context_ = GpuBackendFor(device).CreateLane(device.index);
  }
}

void DeviceLane::Synchronize() const {
  if (context_) context_->Synchronize();
}

DeviceLane::Use::Use(const DeviceLane& lane) {
  if (lane.context_) binding_ = lane.context_->Bind();
}

DeviceLane::Use::~Use() = default;

}  // namespace ringlet::nn
