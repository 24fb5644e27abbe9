// Tensor memory on GPUs, for nn::Tensor: allocation from the device's
// caching allocator, fills and copies on the device's stream. Builds
// without CUDA link storage_without_cuda.cc, whose every function throws a
// DeviceError saying so; nn::Tensor calls these only for cuda:N devices.
#ifndef RINGLET_NN_CUDA_STORAGE_H_
#define RINGLET_NN_CUDA_STORAGE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace ringlet::nn::cuda {

// True in builds with CUDA (whether or not a GPU is present).
bool StorageCompiledIn();

// `count` floats on GPU `device` (values unset), returned to the device's
// caching allocator when the last owner lets go. Throws DeviceError when
// the device does not exist.
std::shared_ptr<float[]> AllocateStorage(int device, size_t count);

// Each returns once the data is where it was sent, so the host may read
// (or reuse) its buffer at once.
void CopyHostToDevice(int device, float* dst, const float* src, size_t count);
void CopyDeviceToHost(int device, float* dst, const float* src, size_t count);
// Queued on the calling thread's context for `device` without the host
// waiting (through pinned memory); the host may reuse `src` at once, and
// only work queued after it on that context may read `dst`.
void CopyHostToDeviceAsync(int device, float* dst, const float* src,
                           size_t count);
// How often the host has waited for a GPU so far (all contexts).
uint64_t HostWaits();
// Both on `device`'s stream; later work on the device sees the result.
void CopyDeviceToDevice(int device, float* dst, const float* src, size_t count);
void FillDevice(int device, float* dst, size_t count, float value);

// An event of `device` (for nn::DeviceFence): recorded on the device's
// stream, waited for by the host.
std::shared_ptr<void> CreateStreamEvent(int device);
void RecordStreamEvent(int device, void* event);
void WaitStreamEvent(int device, void* event);
// The calling thread's stream for `device` waits on the device for it.
void QueueWaitForEvent(int device, void* event);

// A context of `device` of its own (for nn::DeviceLane): its stream,
// library handles and memory pool. BindLane makes it the calling thread's
// context for its device until the returned object is released.
std::shared_ptr<void> CreateLane(int device);
std::shared_ptr<void> BindLane(const std::shared_ptr<void>& lane);
void SynchronizeLane(void* lane);

// Records the work `work` queues on the calling thread's context for
// `device` as a CUDA graph, without running it (for nn::CapturedStep).
// Throws DeviceError naming the cause when `work` throws or makes the host
// wait for the GPU (a graph cannot); the context stays usable.
std::shared_ptr<void> CaptureWork(int device,
                                  const std::function<void()>& work);
// Queues one run of captured work on the calling thread's context for the
// device it was captured on.
void ReplayWork(void* captured);

}  // namespace ringlet::nn::cuda

#endif  // RINGLET_NN_CUDA_STORAGE_H_
