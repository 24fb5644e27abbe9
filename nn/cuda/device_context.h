// What nn keeps per GPU: a stream the device's work runs on, cuDNN and
// cuBLAS handles bound to that stream, and a caching allocator over
// cudaMalloc. Each device has a shared context, made on first use and kept
// until the process exits.
//
// One stream per context keeps the CPU path's semantics (each op finishes
// before the next starts, in order) without host synchronisation, and
// makes the allocator's reuse of freed blocks safe.
//
// A thread may bind a context of its own (Create, then ScopedContext):
// cuDNN forbids two threads using one handle at once, so each of several
// replicas sharing a GPU, each driven by its own thread, gets its own
// context. Memory comes back to the allocator it came from (a tensor keeps
// its context alive); work of two contexts is not ordered, so whoever hands
// a tensor to another context synchronises first.
#ifndef RINGLET_NN_CUDA_DEVICE_CONTEXT_H_
#define RINGLET_NN_CUDA_DEVICE_CONTEXT_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gpu/device_guard.h"
#include "nn/cuda/caching_allocator.h"

namespace ringlet::nn::cuda {

class DeviceContext {
 public:
  // The calling thread's context for GPU `device`: the one a ScopedContext
  // bound on this thread, else the device's shared context, made on first
  // use (thread safe). Throws DeviceError naming the device when it does
  // not exist or a library cannot start on it.
  static DeviceContext& For(int device) { return *Current(device); }
  static std::shared_ptr<DeviceContext> Current(int device);
  // A new context of GPU `device` of its own (stream, handles, allocator),
  // used where a ScopedContext binds it. Throws as For does.
  static std::shared_ptr<DeviceContext> Create(int device);
  ~DeviceContext();

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  // Made on first use (cuBLAS is loaded then; see cublas_library.h).
  cublasHandle_t cublas();
  CachingAllocator& allocator() { return *allocator_; }

  // Waits for everything queued on the stream (before the host reads).
  void Synchronize();

  // An op's state that belongs to this context and must not outlive its
  // handles (cuDNN graph plans are made for one handle): made on first use
  // (a T{}, thread safe), kept until the context goes, destroyed before the
  // handles are. The op guards its own state's concurrent use.
  template <typename T>
  T& OpState(const char* name) {
    std::lock_guard<std::mutex> lock(op_state_mu_);
    for (auto& [key, state] : op_state_) {
      if (key == name) return *static_cast<T*>(state.get());
    }
    op_state_.emplace_back(name, std::make_shared<T>());
    return *static_cast<T*>(op_state_.back().second.get());
  }

  // Queues a copy of `bytes` from host `src` to device `dst` on the stream
  // and returns without waiting for the device: the bytes go through
  // pinned memory of the context's (CUDA waits for the whole stream before
  // a copy from pageable memory), so the caller may reuse `src` at once.
  // Only work queued after it on this stream may read `dst`.
  void UploadAsync(void* dst, const void* src, size_t bytes);

  // While a step is being captured into a CUDA graph (captured_work.h),
  // UploadAsync copies into a pinned buffer of its own, kept in `sink` for
  // the graph's lifetime (each replay copies the bytes captured); null ends
  // that. A graph cannot read a pinned slot that later uploads reuse.
  void SetCaptureSink(std::vector<void*>* sink);

  // How many times any context made the host wait for its device
  // (Synchronize, and an upload finding its pinned buffer still busy):
  // benchmarks report it per step, tests bound it.
  static uint64_t HostWaits();
  // Counts a wait made outside this class (an event waited for).
  static void NoteHostWait();

 private:
  explicit DeviceContext(int device);

  // Pinned buffers for UploadAsync, used in turn; `done` marks when the
  // device has read one.
  struct PinnedSlot {
    void* data = nullptr;
    size_t bytes = 0;
    cudaEvent_t done = nullptr;
    bool in_flight = false;
  };
  // A training step uploads two buffers (images, labels) per stream and the
  // loop keeps up to two steps queued: 8 leave a step's worth of slack.
  // When the host runs further ahead (a benchmark that never reads the
  // loss), reusing a slot waits for the GPU: flow control, counted as a
  // host wait.
  static constexpr int kPinnedSlots = 8;
  std::mutex op_state_mu_;
  // By name (few: a vector); the names are string literals.
  std::vector<std::pair<std::string, std::shared_ptr<void>>> op_state_;
  std::mutex upload_mu_;
  PinnedSlot pinned_[kPinnedSlots];
  int next_slot_ = 0;
  std::vector<void*>* capture_sink_ = nullptr;  // Guarded by upload_mu_.

  int device_;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  std::once_flag cublas_once_;
  cublasHandle_t cublas_ = nullptr;
  bool cublas_math_set_ = false;  // cublas_tf32_ is the handle's math mode.
  bool cublas_tf32_ = false;
  std::unique_ptr<CachingAllocator> allocator_;
};

// Binds `context` as the calling thread's context for its device while
// alive; the previous binding (or none) comes back afterwards. Nestable.
class ScopedContext {
 public:
  explicit ScopedContext(std::shared_ptr<DeviceContext> context);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  int device_;
  std::shared_ptr<DeviceContext> previous_;
};

}  // namespace ringlet::nn::cuda

#endif  // RINGLET_NN_CUDA_DEVICE_CONTEXT_H_
