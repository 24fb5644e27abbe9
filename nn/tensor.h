// Tensor: an array of float32 or bfloat16 (nn/dtype.h) with a shape (NCHW
// for images), stored on one device, with shared ownership: copies and
// views share the storage, like torch tensors. On cuda:N the storage is GPU
// memory from the device's caching allocator (through nn/gpu_backend.h):
// data() then throws (host code must not read it), device_data() hands the
// device pointer to GPU code, and To(Device::Cpu()) brings values back.
// data() and device_data() are float32's; bfloat16 storage is reached
// through bf16_data() or raw_data().
#ifndef RINGLET_NN_TENSOR_H_
#define RINGLET_NN_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/device.h"
#include "nn/dtype.h"
#include "nn/memory_format.h"

namespace ringlet::nn {

using Shape = std::vector<int64_t>;

// "[2, 3, 28, 28]".
std::string ToString(const Shape& shape);
// The product of the dimensions (1 for a scalar's empty shape). Throws
// ShapeError when it overflows 64 bits (a shape read from a hostile file).
int64_t NumElements(const Shape& shape);

// A shape that does not fit an op; the message names the op and the shapes.
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Tensor {
 public:
  // An undefined tensor (no storage); defined() is false.
  Tensor() = default;
  // Zeros of `shape` on `device`. Throws ShapeError for a negative
  // dimension and DeviceError for a device without storage support.
  explicit Tensor(const Shape& shape, Device device = Device::Cpu(),
                  DType dtype = DType::kFloat32);
  // A CPU tensor holding `values` (their count must match the shape).
  static Tensor FromVector(const Shape& shape, std::vector<float> values);
  // A tensor whose values are unset: for outputs an op writes whole, which
  // saves zero-filling memory that is overwritten at once.
  static Tensor Uninitialized(const Shape& shape, Device device = Device::Cpu(),
                              DType dtype = DType::kFloat32,
                              MemoryFormat format = MemoryFormat::kContiguous);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_.at(i); }
  int64_t numel() const { return NumElements(shape_); }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }
  MemoryFormat memory_format() const { return memory_format_; }
  // True for a channels-last tensor whose storage order differs from
  // NCHW's (C > 1 and H * W > 1): code reading the flat storage must mind it.
  bool StoredChannelsLast() const;
  // Throws ShapeError naming `what` and the shape when StoredChannelsLast():
  // for code that reads the flat storage as NCHW.
  void ThrowIfStoredChannelsLast(const std::string& what) const;
  // numel() * ElementSize(dtype()).
  int64_t nbytes() const;

  // Host memory of a float32 tensor. A tensor on a GPU throws DeviceError
  // here (host code must not touch device memory: use To(Device::Cpu()) or
  // CopyToHost), a bfloat16 one DTypeError.
  float* data() {
    if (device_.is_cuda()) ThrowHostAccessToGpu();
    return device_data();
  }
  const float* data() const {
    if (device_.is_cuda()) ThrowHostAccessToGpu();
    return device_data();
  }
  // A float32 tensor's storage wherever it lives (a device pointer on a
  // GPU): for kernels, cuDNN, cuBLAS, copies and collectives. DTypeError
  // for a bfloat16 tensor.
  float* device_data() {
    if (dtype_ != DType::kFloat32) ThrowWrongDType(DType::kFloat32);
    return reinterpret_cast<float*>(storage_.get());
  }
  const float* device_data() const {
    if (dtype_ != DType::kFloat32) ThrowWrongDType(DType::kFloat32);
    return reinterpret_cast<const float*>(storage_.get());
  }
  // A bfloat16 tensor's storage (its elements' 16 bits) wherever it lives;
  // DTypeError for a float32 tensor.
  uint16_t* bf16_data() {
    if (dtype_ != DType::kBFloat16) ThrowWrongDType(DType::kBFloat16);
    return reinterpret_cast<uint16_t*>(storage_.get());
  }
  const uint16_t* bf16_data() const {
    if (dtype_ != DType::kBFloat16) ThrowWrongDType(DType::kBFloat16);
    return reinterpret_cast<const uint16_t*>(storage_.get());
  }
  // The storage of either type wherever it lives, for code that moves
  // bytes (copies, collectives) or switches on dtype() itself.
  void* raw_data() { return storage_.get(); }
  const void* raw_data() const { return storage_.get(); }

  // The same storage under another shape with as many elements. A
  // channels-last tensor views only where both orders agree (C or H * W is
  // 1; the view is contiguous); else ShapeError: convert it first.
  Tensor View(const Shape& shape) const;
  // Elements [offset, offset + NumElements(shape)) of this tensor, sharing
  // its storage (which lives while either does), under `shape`: a gradient
  // inside its allreduce bucket. Throws ShapeError when they do not fit.
  Tensor ViewAt(int64_t offset, const Shape& shape) const;
  // A deep copy on the same device.
  Tensor Clone() const;
  // The values on `device` (this tensor itself when it is already there).
  // Throws DeviceError when the device does not exist or this build has no
  // CUDA.
  Tensor To(Device device) const;
  // The values as `dtype`, on the same device, in the same memory format
  // (this tensor itself when it is already of that type): float32 to
  // bfloat16 rounds to nearest even, bfloat16 to float32 is exact.
  Tensor To(DType dtype) const;
  // The same values stored in `format`, on the same device (this tensor
  // itself when it is already so). Where both orders agree (C or H * W is
  // 1) the result shares this tensor's storage. ShapeError for
  // channels-last of a tensor whose rank is not 4.
  Tensor ToMemoryFormat(MemoryFormat format) const;
  // Every element = value (rounded, for bfloat16).
  void Fill(float value);
  // True when both start at the same element of shared storage (a view or
  // a copy of the handle).
  bool SharesStorageWith(const Tensor& other) const {
    return storage_ == other.storage_;
  }

 private:
  // Allocates storage for shape_ (values unset); checks the shape.
  void Allocate();
  [[noreturn]] void ThrowHostAccessToGpu() const;
  [[noreturn]] void ThrowWrongDType(DType wanted) const;

  std::shared_ptr<std::byte[]> storage_;
  Shape shape_;
  Device device_;
  DType dtype_ = DType::kFloat32;
  MemoryFormat memory_format_ = MemoryFormat::kContiguous;
};

// dst[dst_offset + i] = src[src_offset + i] for i < count, element offsets
// into the flat storage, both tensors of one type (else DTypeError) on the
// same device (on a GPU: on its
// stream, so later work there sees the result; CPU devices share host
// memory and mix). Packs and unpacks flat buffers for collectives. Throws
// DeviceError for a GPU's tensor with another device's, and
// std::out_of_range for a range outside either tensor.
void CopyElements(const Tensor& src, int64_t src_offset, Tensor& dst,
                  int64_t dst_offset, int64_t count);
// dst[i] = src[i] converted to dst's type over the flat storage (to
// bfloat16: nearest even; to float32: exact; the same type: a copy), both
// on one device with as many elements, else DeviceError or ShapeError. On
// a GPU queued on the calling thread's queue for it; a CPU converts at
// once. A gradient bucket's cast to bfloat16 for the wire and back.
void ConvertElements(const Tensor& src, Tensor& dst);
// dst's values from / to host memory of dst.numel() floats in NCHW order,
// wherever dst lives, whatever its memory format (float32 tensors;
// DTypeError for others); each returns once the copy is done.
void CopyFromHost(const float* src, Tensor& dst);
void CopyToHost(const Tensor& src, float* dst);
// CopyFromHost without waiting for a GPU (dst contiguous, else ShapeError):
// the copy is queued (through
// pinned memory) on the calling thread's queue for dst's device, `src` may
// be reused at once, and only work queued after it there may read dst
// (hand dst to another stream or thread through a DeviceEvent). On a CPU,
// CopyFromHost.
void CopyFromHostAsync(const float* src, Tensor& dst);

// How many times the host has waited for a GPU so far, for benchmarks and
// tests that keep a training step to one wait (0 in builds without CUDA).
uint64_t HostWaitsForGpus();

// Throws ShapeError "<op>: <what> has shape [..], expected [..]" unless
// `tensor` has exactly `expected` (-1 in `expected` matches any size).
void ExpectShape(const char* op, const char* what, const Tensor& tensor,
                 const Shape& expected);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_TENSOR_H_
