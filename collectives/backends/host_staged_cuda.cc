// CudaStaging's copies, registered when linked in: on a stream of the GPU's
// own, through pinned host memory (cudaMallocHost), each waited for before
// it returns.
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "collectives/api/collective_error.h"
#include "collectives/backends/host_staged.h"
#include "gpu/cuda_check.h"
#include "gpu/device_guard.h"
#include "gpu/device_probe.h"
#include "gpu/stream.h"

namespace ringlet::collectives {
namespace {

StagingCopies CopiesFor(int gpu) {
  const std::string missing = gpu::MissingGpu(gpu);
  if (!missing.empty()) throw CollectiveError(missing);
  auto stream = std::make_shared<gpu::Stream>(gpu);
  auto copy = [gpu, stream](void* dst, const void* src, size_t bytes,
                            cudaMemcpyKind kind) {
    if (bytes == 0) return;
    gpu::DeviceGuard guard(gpu);
    RINGLET_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream->get()));
    RINGLET_CUDA_CHECK(cudaStreamSynchronize(stream->get()));
  };
  StagingCopies copies;
  copies.to_host = [copy](void* host, const void* device, size_t bytes) {
    copy(host, device, bytes, cudaMemcpyDeviceToHost);
  };
  copies.to_device = [copy](void* device, const void* host, size_t bytes) {
    copy(device, host, bytes, cudaMemcpyHostToDevice);
  };
  copies.allocate_host = [gpu](size_t bytes) {
    gpu::DeviceGuard guard(gpu);
    void* ptr = nullptr;
    RINGLET_CUDA_CHECK(cudaMallocHost(&ptr, bytes));
    return std::shared_ptr<void>(ptr, [](void* p) { cudaFreeHost(p); });
  };
  return copies;
}

[[maybe_unused]] const bool kRegistered =
    (RegisterCudaStagingFactory(&CopiesFor), true);

}  // namespace
}  // namespace ringlet::collectives
