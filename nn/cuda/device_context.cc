#include "nn/cuda/device_context.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gpu/device_probe.h"
#include "nn/cuda/cuda_check.h"
#include "nn/device.h"
#include "nn/gpu_precision.h"
#include "nn/out_of_memory.h"

namespace ringlet::nn::cuda {

namespace {

// Throws DeviceError unless GPU `device` exists.
void CheckDeviceExists(int device) {
  const std::string missing = gpu::MissingGpu(device);
  if (!missing.empty()) throw DeviceError(missing);
}

// The contexts this thread bound, by device (few: a vector).
thread_local std::vector<std::pair<int, std::shared_ptr<DeviceContext>>>
    bound_contexts;

std::shared_ptr<DeviceContext>* BoundContext(int device) {
  for (auto& [d, context] : bound_contexts) {
    if (d == device) return &context;
  }
  return nullptr;
}

}  // namespace

std::shared_ptr<DeviceContext> DeviceContext::Current(int device) {
  if (std::shared_ptr<DeviceContext>* bound = BoundContext(device)) {
    if (*bound) return *bound;
  }
  static std::mutex mu;
  static auto* shared =
      new std::map<int, std::shared_ptr<DeviceContext>>();  // Never freed:
  // handles must not be destroyed after the CUDA runtime has shut down.
  std::lock_guard<std::mutex> lock(mu);
  auto it = shared->find(device);
  if (it == shared->end()) it = shared->emplace(device, Create(device)).first;
  return it->second;
}

std::shared_ptr<DeviceContext> DeviceContext::Create(int device) {
  CheckDeviceExists(device);
  return std::shared_ptr<DeviceContext>(new DeviceContext(device));
}

ScopedContext::ScopedContext(std::shared_ptr<DeviceContext> context)
    : device_(context->device()) {
  if (std::shared_ptr<DeviceContext>* bound = BoundContext(device_)) {
    previous_ = std::move(*bound);
    *bound = std::move(context);
  } else {
    bound_contexts.emplace_back(device_, std::move(context));
  }
}

ScopedContext::~ScopedContext() {
  *BoundContext(device_) = std::move(previous_);
}

namespace {

// What every context's allocator of a device holds, counted together (the
// out-of-memory error names the process's whole share of the device).
std::shared_ptr<std::atomic<int64_t>> HeldOnDevice(int device) {
  static std::mutex mu;
  static std::map<int, std::shared_ptr<std::atomic<int64_t>>> held;
  std::lock_guard<std::mutex> lock(mu);
  auto& counter = held[device];
  if (!counter) counter = std::make_shared<std::atomic<int64_t>>(0);
  return counter;
}

}  // namespace

DeviceContext::DeviceContext(int device) : device_(device) {
  gpu::DeviceGuard guard(device);
  RINGLET_CUDA_CHECK(
      cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  RINGLET_CUDNN_CHECK(cudnnCreate(&cudnn_));
  RINGLET_CUDNN_CHECK(cudnnSetStream(cudnn_, stream_));
  allocator_ = std::make_unique<CachingAllocator>(AllocatorBackend{
      [device](size_t bytes) -> void* {
        gpu::DeviceGuard inner(device);
        void* ptr = nullptr;
        if (cudaMalloc(&ptr, bytes) != cudaSuccess) {
          cudaGetLastError();  // Out of memory: the allocator retries.
          return nullptr;
        }
        return ptr;
      },
      [device](void* ptr) {
        gpu::DeviceGuard inner(device);
        cudaFree(ptr);
      },
      ToString(Device::Cuda(device)),
      [device](int64_t* free, int64_t* total) {
        gpu::DeviceGuard inner(device);
        size_t f = 0, t = 0;
        if (cudaMemGetInfo(&f, &t) == cudaSuccess) {
          *free = static_cast<int64_t>(f);
          *total = static_cast<int64_t>(t);
        } else {
          cudaGetLastError();
        }
      },
      HeldOnDevice(device)});
}

cublasHandle_t DeviceContext::cublas() {
  std::call_once(cublas_once_, [this] {
    gpu::DeviceGuard guard(device_);
    const CublasLibrary& lib = Cublas();
    // Made on first use, when the step may already hold the GPU's memory:
    // the cached blocks go back first, and what still fails is the same
    // out-of-memory error as a tensor's (cuBLAS says only "resource
    // allocation failed", with no hint of what fits).
    cublasStatus_t created = lib.create(&cublas_);
    if (created == CUBLAS_STATUS_ALLOC_FAILED) {
      allocator_->EmptyCache();
      created = lib.create(&cublas_);
    }
    if (created == CUBLAS_STATUS_ALLOC_FAILED) {
      MemoryShortage s;
      s.where = ToString(Device::Cuda(device_));
      s.asked_for = "a cuBLAS handle (the linear layers' workspace)";
      s.held = allocator_->HeldBytes();
      size_t free = 0, total = 0;
      if (cudaMemGetInfo(&free, &total) == cudaSuccess) {
        s.free = static_cast<int64_t>(free);
        s.total = static_cast<int64_t>(total);
      } else {
        cudaGetLastError();
      }
      throw OutOfMemory(s);
    }
    RINGLET_CUBLAS_CHECK(created);
    RINGLET_CUBLAS_CHECK(lib.set_stream(cublas_, stream_));
  });
  // The calling thread's precision (nn/compute_options.h), set when it
  // differs from the last call's.
  const bool tf32 = gpu_precision() == GpuPrecision::kTf32;
  if (!cublas_math_set_ || tf32 != cublas_tf32_) {
    RINGLET_CUBLAS_CHECK(Cublas().set_math_mode(
        cublas_, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    cublas_tf32_ = tf32;
    cublas_math_set_ = true;
  }
  return cublas_;
}

DeviceContext::~DeviceContext() {
  gpu::DeviceGuard guard(device_);
  op_state_.clear();  // Before the handles it was made for.
  for (PinnedSlot& slot : pinned_) {
    if (slot.in_flight) cudaEventSynchronize(slot.done);
    if (slot.done != nullptr) cudaEventDestroy(slot.done);
    if (slot.data != nullptr) cudaFreeHost(slot.data);
  }
  allocator_.reset();
  if (cublas_ != nullptr) Cublas().destroy(cublas_);
  cudnnDestroy(cudnn_);
  cudaStreamDestroy(stream_);
}

namespace {

std::atomic<uint64_t>& HostWaitCounter() {
  static std::atomic<uint64_t> waits{0};
  return waits;
}

}  // namespace

uint64_t DeviceContext::HostWaits() { return HostWaitCounter(); }

void DeviceContext::NoteHostWait() { ++HostWaitCounter(); }

void DeviceContext::Synchronize() {
  gpu::DeviceGuard guard(device_);
  ++HostWaitCounter();
  RINGLET_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void DeviceContext::SetCaptureSink(std::vector<void*>* sink) {
  std::lock_guard<std::mutex> lock(upload_mu_);
  capture_sink_ = sink;
}

void DeviceContext::UploadAsync(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  gpu::DeviceGuard guard(device_);
  {
    std::lock_guard<std::mutex> lock(upload_mu_);
    if (capture_sink_ != nullptr) {
      // Capturing: no event on a pinned slot (a captured event cannot be
      // waited for outside the graph), and a buffer only the graph reads.
      void* pinned = nullptr;
      RINGLET_CUDA_CHECK(cudaMallocHost(&pinned, bytes));
      capture_sink_->push_back(pinned);
      std::memcpy(pinned, src, bytes);
      RINGLET_CUDA_CHECK(
          cudaMemcpyAsync(dst, pinned, bytes, cudaMemcpyHostToDevice, stream_));
      return;
    }
  }
  constexpr size_t kLargest = size_t{64} << 20;
  if (bytes > kLargest) {
    // Rare (not a batch): not worth pinning this much; CUDA waits.
    ++HostWaitCounter();
    RINGLET_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    return;
  }
  std::lock_guard<std::mutex> lock(upload_mu_);
  PinnedSlot& slot = pinned_[next_slot_];
  next_slot_ = (next_slot_ + 1) % kPinnedSlots;
  if (slot.in_flight) {
    // Queued kPinnedSlots uploads ago: almost always read long since.
    if (cudaEventQuery(slot.done) == cudaErrorNotReady) ++HostWaitCounter();
    RINGLET_CUDA_CHECK(cudaEventSynchronize(slot.done));
    slot.in_flight = false;
  }
  if (slot.bytes < bytes) {
    const size_t grown = std::max(bytes, 2 * slot.bytes);
    if (slot.data != nullptr) RINGLET_CUDA_CHECK(cudaFreeHost(slot.data));
    slot.data = nullptr;
    slot.bytes = 0;
    RINGLET_CUDA_CHECK(cudaMallocHost(&slot.data, grown));
    slot.bytes = grown;
  }
  if (slot.done == nullptr) {
    RINGLET_CUDA_CHECK(
        cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming));
  }
  std::memcpy(slot.data, src, bytes);
  RINGLET_CUDA_CHECK(
      cudaMemcpyAsync(dst, slot.data, bytes, cudaMemcpyHostToDevice, stream_));
  RINGLET_CUDA_CHECK(cudaEventRecord(slot.done, stream_));
  slot.in_flight = true;
}

}  // namespace ringlet::nn::cuda
