// A point in a device's queue of work, for handing results to another
// thread or library: Record() marks everything enqueued on the device so
// far; Wait() blocks the calling (host) thread until that has run.
//
// nn's ops on a GPU are queued on the device's stream and return at once;
// a collective that reads their output on its own stream must not start
// before them. On CPU devices both calls do nothing: CPU ops have finished
// when they return.
#ifndef RINGLET_NN_DEVICE_EVENT_H_
#define RINGLET_NN_DEVICE_EVENT_H_

#include <memory>

#include "nn/device.h"

namespace ringlet::gpu {
class Event;
}  // namespace ringlet::gpu

namespace ringlet::nn {

class GpuEvent;

class DeviceEvent {
 public:
  DeviceEvent() = default;  // A CPU event.
  // Throws DeviceError for a GPU that does not exist or a build without
  // CUDA.
  explicit DeviceEvent(Device device);

  void Record();
  void Wait() const;
  // The calling thread's queue for the device waits, on the device, until
  // the event has passed; the host goes on at once. Nothing on CPUs.
  void QueueWait() const;
  // The GPU event behind the event (null on CPUs), for a collective
  // queued after it (Communicator::AllReduceAsync's `after`).
  const gpu::Event* event() const;

 private:
  Device device_;
  std::shared_ptr<GpuEvent> event_;  // Null on CPUs.
};

// The calling thread's queue for `device` waits, on the device, until a
// library's event has passed (a collective's Work::event()); the host goes
// on at once.
void QueueWaitForEvent(Device device, const gpu::Event& event);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_DEVICE_EVENT_H_
