#include "nn/device_fence.h"

#include "nn/cuda/storage.h"

namespace ringlet::nn {

DeviceFence::DeviceFence(Device device) : device_(device) {
  if (device.is_cuda()) event_ = cuda::CreateStreamEvent(device.index);
}

void DeviceFence::Record() {
  if (event_) cuda::RecordStreamEvent(device_.index, event_.get());
}

void DeviceFence::Wait() const {
  if (event_) cuda::WaitStreamEvent(device_.index, event_.get());
}

void DeviceFence::QueueWait() const {
  if (event_) cuda::QueueWaitForEvent(device_.index, event_.get());
}

void* DeviceFence::native() const {
  return event_ ? cuda::NativeEvent(event_.get()) : nullptr;
}

}  // namespace ringlet::nn
