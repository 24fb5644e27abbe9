// The one dispatch point of nn's ops, c10's dispatcher in miniature: each
// op keeps a KernelTable of its implementations, one per device type, and
// its front (the op's function in nn/ops) checks the arguments once, then
// calls `table.For(device)(...)`. The CPU kernels (nn/ops/cpu) and the
// CUDA ones (nn/ops/cuda, when the toolkit is linked) register alike, from
// static initialisers in libraries built with alwayslink; a CPU-only build
// has one entry per table.
//
// A new op is: its header (the function, its table), its front, its CPU
// file and its CUDA file, each registering with one line:
//
//   RINGLET_REGISTER_KERNEL(kernels::gelu_forward, DeviceType::kCpu,
//                           GeluForwardCpu);
#ifndef RINGLET_NN_OPS_KERNEL_TABLE_H_
#define RINGLET_NN_OPS_KERNEL_TABLE_H_

#include "gpu/registration.h"
#include "nn/device.h"

namespace ringlet::nn {

inline constexpr int kNumDeviceTypes = 2;  // DeviceType's kCpu and kCuda.

// The DeviceError of a table without an implementation for `device`'s
// type: the op's GPU library is not linked (a CPU-only build), or the op
// has none for that device type.
[[noreturn]] void ThrowNoKernel(const char* op, Device device);

// `Fn` is the implementations' function type, e.g. Tensor(const Tensor&).
// Tables are constant-initialised (constexpr constructor), so they exist
// before any static initialiser registers into them.
template <typename Fn>
class KernelTable {
 public:
  explicit constexpr KernelTable(const char* op) : op_(op) {}
  KernelTable(const KernelTable&) = delete;
  KernelTable& operator=(const KernelTable&) = delete;

  // The implementation for `device`'s type; ThrowNoKernel without one.
  Fn& For(Device device) const {
    Fn* fn = kernels_[static_cast<int>(device.type)].Get();
    if (fn == nullptr) ThrowNoKernel(op_, device);
    return *fn;
  }
  bool Has(DeviceType type) const {
    return kernels_[static_cast<int>(type)].Get() != nullptr;
  }
  // Once per device type, by that device's library; a second registration
  // replaces the first (a test's fake).
  void Register(DeviceType type, Fn* fn) {
    kernels_[static_cast<int>(type)].Set(fn);
  }
  const char* op() const { return op_; }

 private:
  const char* op_;
  // One registration slot per device type (gpu/registration.h).
  gpu::Registration<Fn*> kernels_[kNumDeviceTypes];
};

// For RINGLET_REGISTER_KERNEL: registers and returns true.
template <typename Fn>
bool RegisterKernel(KernelTable<Fn>& table, DeviceType type, Fn* fn) {
  table.Register(type, fn);
  return true;
}

#define RINGLET_KERNEL_CONCAT_INNER(a, b) a##b
#define RINGLET_KERNEL_CONCAT(a, b) RINGLET_KERNEL_CONCAT_INNER(a, b)
// Registers `fn` as `table`'s implementation for `type` when the program
// starts (at namespace scope, in a library with alwayslink = True).
#define RINGLET_REGISTER_KERNEL(table, type, fn)            \
  [[maybe_unused]] static const bool RINGLET_KERNEL_CONCAT( \
      ringlet_kernel_registered_, __LINE__) =               \
      ::ringlet::nn::RegisterKernel(table, type, fn)

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_KERNEL_TABLE_H_
