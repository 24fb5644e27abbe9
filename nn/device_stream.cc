#include "nn/device_stream.h"

#include "nn/gpu_backend.h"

namespace ringlet::nn {

DeviceStream::DeviceStream(Device device) : device_(device) {
  if (device.is_cuda()) {
    context_ = GpuBackendFor(device).CreateLane(device.index);
  }
}

void DeviceStream::Synchronize() const {
  if (context_) context_->Synchronize();
}

DeviceStream::Use::Use(const DeviceStream& lane) {
  if (lane.context_) binding_ = lane.context_->Bind();
}

DeviceStream::Use::~Use() = default;

}  // namespace ringlet::nn
