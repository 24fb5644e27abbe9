// nn's GPU backend on CUDA (gpu_backend.h), registered when this library is
// linked in: tensor memory from each device's caching allocator, copies and
// fills on the calling thread's stream for the device, events, lanes and
// captured steps.
#include <cuda_runtime.h>

#include <memory>

#include "gpu/device_guard.h"
#include "gpu/stream.h"
#include "nn/cuda/captured_work.h"
#include "nn/cuda/cuda_check.h"
#include "nn/cuda/device_context.h"
#include "nn/cuda/elementwise_kernels.h"
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
  std::shared_ptr<float[]> Allocate(int device, size_t count) override {
    // The memory goes back to the allocator it came from, whichever thread
    // lets go last: the storage keeps that context alive.
    std::shared_ptr<DeviceContext> context = DeviceContext::Current(device);
    // At least one element, so an empty tensor still has storage (defined).
    auto* data = static_cast<float*>(
        context->allocator().Allocate((count > 0 ? count : 1) * sizeof(float)));
    return std::shared_ptr<float[]>(
        data, [context](float* p) { context->allocator().Free(p); });
  }

  void CopyHostToDevice(int device, float* dst, const float* src,
                        size_t count) override {
    Copy(device, dst, src, count, cudaMemcpyHostToDevice, /*wait=*/true);
  }

  void CopyDeviceToHost(int device, float* dst, const float* src,
                        size_t count) override {
    Copy(device, dst, src, count, cudaMemcpyDeviceToHost, /*wait=*/true);
  }

  void CopyDeviceToDevice(int device, float* dst, const float* src,
                          size_t count) override {
    Copy(device, dst, src, count, cudaMemcpyDeviceToDevice, /*wait=*/false);
  }

  void CopyHostToDeviceAsync(int device, float* dst, const float* src,
                             size_t count) override {
    DeviceContext::For(device).UploadAsync(dst, src, count * sizeof(float));
  }

  void Fill(int device, float* dst, size_t count, float value) override {
    DeviceContext& context = DeviceContext::For(device);
    gpu::DeviceGuard guard(device);
    fill_forward(dst, static_cast<int64_t>(count), value, context.stream());
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

 private:
  static void Copy(int device, float* dst, const float* src, size_t count,
                   cudaMemcpyKind kind, bool wait) {
    DeviceContext& context = DeviceContext::For(device);
    gpu::DeviceGuard guard(device);
    RINGLET_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float), kind,
                                       context.stream()));
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
