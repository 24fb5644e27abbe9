// One registration slot: the one pattern of every seam between plain C++
// and a library that may be absent (CUDA's backend for nn, the kernel
// tables' CUDA entries, the device probe, profiler hooks, NCCL, the CUDA
// ring and host staging). The library fills it from a static initialiser
// when it is linked in whole (alwayslink); the plain-C++ front reads it and
// finds it empty in a build without the library. Constant-initialised, so
// it exists before any initialiser registers into it.
#ifndef RINGLET_GPU_REGISTRATION_H_
#define RINGLET_GPU_REGISTRATION_H_

#include <atomic>

namespace ringlet::gpu {

// T: a pointer or a function pointer.
template <typename T>
class Registration {
 public:
  constexpr Registration() = default;
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

  // A second Set replaces the first (a test's fake).
  void Set(T value) { value_.store(value, std::memory_order_release); }
  // Null where nothing registered.
  T Get() const { return value_.load(std::memory_order_acquire); }

 private:
  std::atomic<T> value_{nullptr};
};

}  // namespace ringlet::gpu

#endif  // RINGLET_GPU_REGISTRATION_H_
