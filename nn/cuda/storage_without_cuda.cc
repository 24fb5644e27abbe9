// nn::cuda storage for builds without CUDA: every call is a clear error.
#include "nn/cuda/storage.h"
#include "nn/device.h"

namespace ringlet::nn::cuda {
namespace {

[[noreturn]] void NoCuda(int device) {
  throw DeviceError("a tensor on cuda:" + std::to_string(device) +
                    " needs CUDA, which this build of nn does not have (no "
                    "CUDA toolkit was found, or --config=cpu_only); use a "
                    "CPU device, or rebuild where CUDA is installed");
}

}  // namespace

bool StorageCompiledIn() { return false; }

std::shared_ptr<float[]> AllocateStorage(int device, size_t) { NoCuda(device); }
void CopyHostToDevice(int device, float*, const float*, size_t) {
  NoCuda(device);
}
void CopyDeviceToHost(int device, float*, const float*, size_t) {
  NoCuda(device);
}
void CopyDeviceToDevice(int device, float*, const float*, size_t) {
  NoCuda(device);
}
void FillDevice(int device, float*, size_t, float) { NoCuda(device); }
void CopyHostToDeviceAsync(int device, float*, const float*, size_t) {
  NoCuda(device);
}
uint64_t HostWaits() { return 0; }
std::shared_ptr<void> CreateStreamEvent(int device) { NoCuda(device); }
void RecordStreamEvent(int device, void*) { NoCuda(device); }
void WaitStreamEvent(int device, void*) { NoCuda(device); }
void QueueWaitForEvent(int device, void*) { NoCuda(device); }
std::shared_ptr<void> CreateLane(int device) { NoCuda(device); }
// Never reached: no lane exists without CUDA.
std::shared_ptr<void> BindLane(const std::shared_ptr<void>&) { return nullptr; }
void SynchronizeLane(void*) {}

std::shared_ptr<void> CaptureWork(int device, const std::function<void()>&) {
  NoCuda(device);
}
// Never reached: no captured work exists without CUDA.
void ReplayWork(void*) {}

}  // namespace ringlet::nn::cuda
