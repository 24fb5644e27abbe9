// nn's GPU backend on CUDA (gpu_backend.h), registered when this library is
// linked in: tensor memory from each device's caching allocator, copies and
// fills on the calling thread's stream for the device, events, streams and
// captured steps.
#include <cuda_runtime.h>

#include <memory>

#include "gpu/device_guard.h"
#include "gpu/stream.h"
#include "nn/cuda/captured_work.h"
#include "nn/cuda/cuda_check.h"
#include "nn/cuda/device_context.h"
#include "nn/cuda/tensor_kernels.h"
#include "nn/cuda/transpose_kernels.h"
#include "nn/gpu_backend.h"

namespace ringlet::nn::cuda {
namespace {

class CudaEvent : public GpuEvent {
 public:
  explicit CudaEvent(int device) : device_(device), event_(device) {}

  void Record() override {
    event_.Record(DeviceContext::For(device_).stream());
  }
  void Wait() override {
    DeviceContext::NoteHostWait();
    event_.Synchronize();
  }
  void QueueWait() override {
    DeviceContext& context = DeviceContext::For(device_);
    gpu::DeviceGuard guard(device_);
    RINGLET_CUDA_CHECK(cudaStreamWaitEvent(context.stream(), event_.get(), 0));
  }
  const gpu::Event& event() const override { return event_; }

 private:
  const int device_;
  gpu::Event event_;
};

class CudaLaneBinding : public GpuStreamBinding {
 public:
  explicit CudaLaneBinding(std::shared_ptr<DeviceContext> context)
      : scope_(std::move(context)) {}

 private:
  ScopedContext scope_;
};

class CudaLane : public GpuStream {
 public:
  explicit CudaLane(std::shared_ptr<DeviceContext> context)
      : context_(std::move(context)) {}

  void Synchronize() override { context_->Synchronize(); }
  std::unique_ptr<GpuStreamBinding> Bind() override {
    return std::make_unique<CudaLaneBinding>(context_);
  }

 private:
  std::shared_ptr<DeviceContext> context_;
};

class CudaBackend : public GpuBackend {
 public:
  std::shared_ptr<std::byte[]> Allocate(int device, size_t bytes) override {
    // The memory goes back to the allocator it came from, whichever thread
    // lets go last: the storage keeps that context alive.
    std::shared_ptr<DeviceContext> context = DeviceContext::Current(device);
    // At least one byte, so an empty tensor still has storage (defined).
    auto* data = static_cast<std::byte*>(
        context->allocator().Allocate(bytes > 0 ? bytes : 1));
    return std::shared_ptr<std::byte[]>(
        data, [context](std::byte* p) { context->allocator().Free(p); });
  }

  void CopyHostToDevice(int device, void* dst, const void* src,
                        size_t bytes) override {
    Copy(device, dst, src, bytes, cudaMemcpyHostToDevice, /*wait=*/true);
  }

  void CopyDeviceToHost(int device, void* dst, const void* src,
                        size_t bytes) override {
    Copy(device, dst, src, bytes, cudaMemcpyDeviceToHost, /*wait=*/true);
  }

  void CopyDeviceToDevice(int device, void* dst, const void* src,
                          size_t bytes) override {
    Copy(device, dst, src, bytes, cudaMemcpyDeviceToDevice, /*wait=*/false);
  }

  void CopyHostToDeviceAsync(int device, void* dst, const void* src,
                             size_t bytes) override {
    DeviceContext::For(device).UploadAsync(dst, src, bytes);
  }

  void Fill(int device, void* dst, DType dtype, size_t count,
            float value) override {
    DeviceContext& context = DeviceContext::For(device);
    gpu::DeviceGuard guard(device);
    const auto n = static_cast<int64_t>(count);
    if (dtype == DType::kBFloat16) {
      fill_bf16_forward(static_cast<uint16_t*>(dst), n, value,
                        context.stream());
    } else {
      fill_forward(static_cast<float*>(dst), n, value, context.stream());
    }
  }

  void TransposeBatched(int device, const void* src, void* dst, DType dtype,
                        int64_t batch, int64_t rows, int64_t cols) override {
    DeviceContext& context = DeviceContext::For(device);
    gpu::DeviceGuard guard(device);
    transpose_batched(src, dst, static_cast<int>(ElementSize(dtype)), batch,
                      rows, cols, context.stream());
  }

  void Convert(int device, const void* src, DType from, void* dst, DType to,
               size_t count) override {
    DeviceContext& context = DeviceContext::For(device);
    gpu::DeviceGuard guard(device);
    const auto n = static_cast<int64_t>(count);
    if (from == to) {
      Copy(device, dst, src, count * ElementSize(from),
           cudaMemcpyDeviceToDevice, /*wait=*/false);
    } else if (to == DType::kBFloat16) {
      float_to_bf16_forward(static_cast<const float*>(src),
                            static_cast<uint16_t*>(dst), n, context.stream());
    } else {
      bf16_to_float_forward(static_cast<const uint16_t*>(src),
                            static_cast<float*>(dst), n, context.stream());
    }
  }

  uint64_t HostWaits() const override { return DeviceContext::HostWaits(); }

  std::unique_ptr<GpuEvent> CreateEvent(int device) override {
    DeviceContext::For(device);  // A clear error for a GPU that is not there.
    return std::make_unique<CudaEvent>(device);
  }

  void QueueWaitFor(int device, const gpu::Event& event) override {
    DeviceContext& context = DeviceContext::For(device);
    gpu::DeviceGuard guard(device);
    RINGLET_CUDA_CHECK(cudaStreamWaitEvent(context.stream(), event.get(), 0));
  }

  std::shared_ptr<GpuStream> CreateLane(int device) override {
    return std::make_shared<CudaLane>(DeviceContext::Create(device));
  }

  std::unique_ptr<GpuCapturedWork> Capture(
      int device, const std::function<void()>& work) override {
    return CaptureWork(device, work);
  }

  GpuMemoryStats MemoryStats(int device) override {
    const AllocatorStats s = DeviceContext::For(device).allocator().stats();
    GpuMemoryStats out;
    out.in_use_bytes = static_cast<int64_t>(s.in_use_bytes);
    out.peak_in_use_bytes = static_cast<int64_t>(s.peak_in_use_bytes);
    out.held_bytes = static_cast<int64_t>(s.in_use_bytes + s.cached_bytes);
    return out;
  }

  void ResetPeakMemory(int device) override {
    DeviceContext::For(device).allocator().ResetPeak();
  }

 private:
  static void Copy(int device, void* dst, const void* src, size_t bytes,
                   cudaMemcpyKind kind, bool wait) {
    DeviceContext& context = DeviceContext::For(device);
    gpu::DeviceGuard guard(device);
    RINGLET_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, bytes, kind, context.stream()));
    if (wait) context.Synchronize();
  }
};

// Registered while static objects are made; the library is linked whole
// (alwayslink), so this runs in every program that depends on it.
const bool kRegistered = [] {
  static CudaBackend backend;
  RegisterGpuBackend(&backend);
  return true;
}();

}  // namespace
}  // namespace ringlet::nn::cuda
