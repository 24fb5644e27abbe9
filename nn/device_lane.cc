#include "nn/device_lane.h"

#include "nn/cuda/storage.h"

namespace ringlet::nn {

DeviceLane::DeviceLane(Device device) : device_(device) {
  if (device.is_cuda()) context_ = cuda::CreateLane(device.index);
}

void DeviceLane::Synchronize() const {
  if (context_) cuda::SynchronizeLane(context_.get());
}

DeviceLane::Use::Use(const DeviceLane& lane) {
  if (lane.context_) binding_ = cuda::BindLane(lane.context_);
}

}  // namespace ringlet::nn
