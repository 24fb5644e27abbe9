// The one seam between nn and a GPU library, in the manner of c10's
// DeviceGuardImplInterface: what nn asks of a GPU (memory, copies and fills
// on a device's stream, events, streams, captured work), as an interface the
// CUDA library (//nn/cuda:storage) registers when it is linked in. A build
// without CUDA registers none, and every call for a cuda:N device is then
// a DeviceError saying so; no code of nn is compiled twice.
#ifndef RINGLET_NN_GPU_BACKEND_H_
#define RINGLET_NN_GPU_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "nn/device.h"
#include "nn/dtype.h"

namespace ringlet::gpu {
class Event;
}  // namespace ringlet::gpu

namespace ringlet::nn {

// A point in a GPU's queue of work (nn::DeviceEvent holds one).
class GpuEvent {
 public:
  virtual ~GpuEvent() = default;
  // Marks everything the calling thread has queued on the device so far.
  virtual void Record() = 0;
  // Blocks the host until the mark has passed.
  virtual void Wait() = 0;
  // The calling thread's queue for the device waits, on the device, until
  // the mark has passed.
  virtual void QueueWait() = 0;
  // For a library that orders its own stream after the mark (NCCL).
  virtual const gpu::Event& event() const = 0;
};

// While alive, the calling thread's work on a device goes to a stream.
class GpuStreamBinding {
 public:
  virtual ~GpuStreamBinding() = default;
};

// A device context of its own (nn::DeviceStream holds one): its stream,
// library handles and memory pool.
class GpuStream {
 public:
  virtual ~GpuStream() = default;
  // Waits until the work queued on the stream has run.
  virtual void Synchronize() = 0;
  virtual std::unique_ptr<GpuStreamBinding> Bind() = 0;
};

// Work recorded once as a CUDA graph (nn::CapturedStep holds one).
class GpuCapturedWork {
 public:
  virtual ~GpuCapturedWork() = default;
  // Queues one run on the calling thread's context for its device.
  virtual void Replay() = 0;
};

// A device's memory as its caching allocator sees it (tensors and library
// workspaces; not the CUDA context's own, nor cuDNN's algorithm search).
struct GpuMemoryStats {
  int64_t in_use_bytes = 0;       // Handed out, not yet freed.
  int64_t peak_in_use_bytes = 0;  // The most in use at once since a reset.
  int64_t held_bytes = 0;         // In use plus cached for reuse.
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;

  // `bytes` of memory on GPU `device` (values unset), returned to the
  // device's caching allocator when the last owner lets go. Throws
  // DeviceError when the device does not exist, OutOfMemory when it is full.
  virtual std::shared_ptr<std::byte[]> Allocate(int device, size_t bytes) = 0;
  // Each returns once the data is where it was sent.
  virtual void CopyHostToDevice(int device, void* dst, const void* src,
                                size_t bytes) = 0;
  virtual void CopyDeviceToHost(int device, void* dst, const void* src,
                                size_t bytes) = 0;
  // Queued on the calling thread's context through pinned memory: the host
  // may reuse `src` at once; only work queued after it may read `dst`.
  virtual void CopyHostToDeviceAsync(int device, void* dst, const void* src,
                                     size_t bytes) = 0;
  // The rest are queued on the device's stream; later work on it sees the
  // result.
  virtual void CopyDeviceToDevice(int device, void* dst, const void* src,
                                  size_t bytes) = 0;
  // `count` elements of `dtype` = value (rounded to it).
  virtual void Fill(int device, void* dst, DType dtype, size_t count,
                    float value) = 0;
  // dst[i] = src[i] converted from `from` to `to` (`count` elements).
  virtual void Convert(int device, const void* src, DType from, void* dst,
                       DType to, size_t count) = 0;
  // For each of `batch` matrices of rows x cols elements of `dtype`:
  // dst[b][j][i] = src[b][i][j] (NCHW to NHWC is rows C, cols H * W).
  virtual void TransposeBatched(int device, const void* src, void* dst,
                                DType dtype, int64_t batch, int64_t rows,
                                int64_t cols) = 0;
  // How often the host has waited for a GPU so far (all contexts).
  virtual uint64_t HostWaits() const = 0;

  virtual std::unique_ptr<GpuEvent> CreateEvent(int device) = 0;
  // The calling thread's queue for `device` waits, on the device, for an
  // event of a library's (a collective's Work::event()).
  virtual void QueueWaitFor(int device, const gpu::Event& event) = 0;
  virtual std::shared_ptr<GpuStream> CreateLane(int device) = 0;
  // Records what `work` queues on the calling thread's context for
  // `device` as a CUDA graph, without running it. Throws DeviceError naming
  // the cause when `work` throws or makes the host wait for the GPU.
  virtual std::unique_ptr<GpuCapturedWork> Capture(
      int device, const std::function<void()>& work) = 0;
  // The memory of the calling thread's context for `device` (the device's
  // shared one unless a stream is bound), and a fresh start of its peak.
  virtual GpuMemoryStats MemoryStats(int device) = 0;
  virtual void ResetPeakMemory(int device) = 0;
};

// The GPU library linked into this program, for a tensor or stream on
// `device`; throws DeviceError saying the build has no CUDA when none is.
GpuBackend& GpuBackendFor(Device device);
// Null in builds without CUDA.
GpuBackend* RegisteredGpuBackend();
// For the GPU library, once, while static objects are made; `backend` lives
// as long as the program.
void RegisterGpuBackend(GpuBackend* backend);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_GPU_BACKEND_H_
