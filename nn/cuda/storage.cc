#include "nn/cuda/storage.h"

#include "gpu/stream.h"
#include "nn/cuda/cuda_check.h"
#include "nn/cuda/device_context.h"
#include "nn/cuda/elementwise_kernels.h"

namespace ringlet::nn::cuda {

bool StorageCompiledIn() { return true; }

std::shared_ptr<float[]> AllocateStorage(int device, size_t count) {
  // The memory goes back to the allocator it came from, whichever thread
  // lets go last: the storage keeps that context alive.
  std::shared_ptr<DeviceContext> context = DeviceContext::Current(device);
  // At least one element, so an empty tensor still has storage (defined).
  auto* data = static_cast<float*>(
      context->allocator().Allocate((count > 0 ? count : 1) * sizeof(float)));
  return std::shared_ptr<float[]>(
      data, [context](float* p) { context->allocator().Free(p); });
}

void CopyHostToDevice(int device, float* dst, const float* src, size_t count) {
  DeviceContext& context = DeviceContext::For(device);
  gpu::DeviceGuard guard(device);
  RINGLET_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float),
                                     cudaMemcpyHostToDevice, context.stream()));
  context.Synchronize();
}

void CopyDeviceToHost(int device, float* dst, const float* src, size_t count) {
  DeviceContext& context = DeviceContext::For(device);
  gpu::DeviceGuard guard(device);
  RINGLET_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float),
                                     cudaMemcpyDeviceToHost, context.stream()));
  context.Synchronize();
}

void CopyDeviceToDevice(int device, float* dst, const float* src,
                        size_t count) {
  DeviceContext& context = DeviceContext::For(device);
  gpu::DeviceGuard guard(device);
  RINGLET_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float),
                                     cudaMemcpyDeviceToDevice,
                                     context.stream()));
}

void FillDevice(int device, float* dst, size_t count, float value) {
  DeviceContext& context = DeviceContext::For(device);
  gpu::DeviceGuard guard(device);
  fill_forward(dst, static_cast<int64_t>(count), value, context.stream());
}

std::shared_ptr<void> CreateStreamEvent(int device) {
  DeviceContext::For(device);  // A clear error for a GPU that is not there.
  return std::make_shared<gpu::Event>(device);
}

void RecordStreamEvent(int device, void* event) {
  static_cast<gpu::Event*>(event)->Record(DeviceContext::For(device).stream());
}

void WaitStreamEvent(int, void* event) {
  DeviceContext::NoteHostWait();
  static_cast<gpu::Event*>(event)->Synchronize();
}

void QueueWaitForEvent(int device, void* event) {
  DeviceContext& context = DeviceContext::For(device);
  gpu::DeviceGuard guard(device);
  RINGLET_CUDA_CHECK(cudaStreamWaitEvent(
      context.stream(), static_cast<gpu::Event*>(event)->get(), 0));
}

void CopyHostToDeviceAsync(int device, float* dst, const float* src,
                           size_t count) {
  DeviceContext::For(device).UploadAsync(dst, src, count * sizeof(float));
}

uint64_t HostWaits() { return DeviceContext::HostWaits(); }

std::shared_ptr<void> CreateLane(int device) {
  return DeviceContext::Create(device);
}

std::shared_ptr<void> BindLane(const std::shared_ptr<void>& lane) {
  return std::make_shared<ScopedContext>(
      std::static_pointer_cast<DeviceContext>(lane));
}

void SynchronizeLane(void* lane) {
  static_cast<DeviceContext*>(lane)->Synchronize();
}

}  // namespace ringlet::nn::cuda
