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

const gpu::Event* DeviceFence::event() const {
  // CreateStreamEvent made a gpu::Event.
  return static_cast<const gpu::Event*>(event_.get());
}

void QueueWaitForEvent(Device device, const gpu::Event& event) {
  if (!device.is_cuda()) return;  // CPU ops have finished when they return.
  cuda::QueueWaitForEvent(device.index,
                          const_cast<void*>(static_cast<const void*>(&event)));
}

}  // namespace ringlet::nn
