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

DeviceStream::Use::Use(const DeviceStream& stream) {
  if (stream.context_) binding_ = stream.context_->Bind();
}

DeviceStream::Use::~Use() = default;

}  // namespace ringlet::nn
