#include "gpu/stream.h"

#include "gpu/cuda_check.h"
#include "gpu/device_guard.h"

namespace ringlet::gpu {
namespace {

// For destructors, which must not throw: makes `device` current while it
// lives, if it can, and puts the previous device back.
class QuietDeviceGuard {
 public:
  explicit QuietDeviceGuard(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    cudaSetDevice(device);
  }
  ~QuietDeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
    cudaGetLastError();
  }

 private:
  int previous_ = -1;
};

}  // namespace

Stream::Stream(int device) : device_(device) {
  DeviceGuard guard(device_);
  RINGLET_CUDA_CHECK(
      cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (stream_ == nullptr) return;
  QuietDeviceGuard guard(device_);
  cudaStreamDestroy(stream_);  // Returns at once; queued work still runs.
}

void Stream::Synchronize() const {
  DeviceGuard guard(device_);
  RINGLET_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

bool Stream::Idle() const {
  DeviceGuard guard(device_);
  const cudaError_t status = cudaStreamQuery(stream_);
  if (status == cudaErrorNotReady) return false;
  RINGLET_CUDA_CHECK(status);
  return true;
}

Event::Event(int device) : device_(device) {
  DeviceGuard guard(device_);
  RINGLET_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
}

Event::~Event() {
  if (event_ == nullptr) return;
  QuietDeviceGuard guard(device_);
  cudaEventDestroy(event_);
}

void Event::Record(cudaStream_t stream) {
  DeviceGuard guard(device_);
  RINGLET_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void Event::Synchronize() const {
  DeviceGuard guard(device_);
  RINGLET_CUDA_CHECK(cudaEventSynchronize(event_));
}

bool Event::Done() const {
  DeviceGuard guard(device_);
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) return false;
  RINGLET_CUDA_CHECK(status);
  return true;
}

void StreamWaitsFor(cudaStream_t stream, const Event& event) {
  RINGLET_CUDA_CHECK(cudaStreamWaitEvent(stream, event.get(), 0));
}

}  // namespace ringlet::gpu
