#include "nn/device_event.h"

#include "nn/gpu_backend.h"

namespace ringlet::nn {

DeviceEvent::DeviceEvent(Device device) : device_(device) {
  if (device.is_cuda()) {
    event_ = GpuBackendFor(device).CreateEvent(device.index);
  }
}

void DeviceEvent::Record() {
  if (event_) event_->Record();
}

void DeviceEvent::Wait() const {
  if (event_) event_->Wait();
}

void DeviceEvent::QueueWait() const {
  if (event_) event_->QueueWait();
}

const gpu::Event* DeviceEvent::event() const {
  return event_ ? &event_->event() : nullptr;
}

void QueueWaitForEvent(Device device, const gpu::Event& event) {
  if (!device.is_cuda()) return;  // CPU ops have finished when they return.
  GpuBackendFor(device).QueueWaitFor(device.index, event);
}

}  // namespace ringlet::nn
