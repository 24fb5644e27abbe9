#include "nn/tensor.h"

#include <algorithm>
#include <cstdint>
#include <new>
#include <string>

#include "nn/gpu_backend.h"
#include "nn/host_block_cache.h"

namespace ringlet::nn {

std::string ToString(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += shape[i] < 0 ? std::string("*") : std::to_string(shape[i]);
  }
  return out + "]";
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) {
      throw ShapeError("tensor shape " + ToString(shape) +
                       " has more elements than a 64-bit count holds");
    }
  }
  return n;
}

void Tensor::Allocate() {
  for (int64_t d : shape_) {
    if (d < 0) {
      throw ShapeError("tensor shape " + ToString(shape_) +
                       " has a negative dimension");
    }
  }
  const int64_t elements = NumElements(shape_);
  // Bytes in a 64-bit count too (no memory comes near).
  if (elements > INT64_MAX / static_cast<int64_t>(sizeof(float))) {
    throw ShapeError("tensor shape " + ToString(shape_) + " needs " +
                     std::to_string(elements) +
                     " floats, more bytes than any memory holds");
  }
  if (device_.is_cuda()) {
    storage_ = GpuBackendFor(device_).Allocate(device_.index, elements);
    return;
  }
  // 64-byte aligned: vectorised kernels (Eigen's reductions among them)
  // split work by alignment, so equal inputs at differently aligned
  // addresses could round differently. Aligned storage keeps every result
  // a function of the values alone, which reproducibility needs. Large
  // blocks are kept for reuse when freed (host_block_cache.h).
  const size_t bytes =
      std::max<size_t>(1, static_cast<size_t>(elements) * sizeof(float));
  const HostBlock block = AllocateHostBlock(bytes);
  storage_ =
      std::shared_ptr<float[]>(static_cast<float*>(block.data),
                               [block](float*) { FreeHostBlock(block); });
}

Tensor::Tensor(const Shape& shape, Device device)
    : shape_(shape), device_(device) {
  Allocate();
  Fill(0.0f);
}

Tensor Tensor::Uninitialized(const Shape& shape, Device device) {
  Tensor t;
  t.shape_ = shape;
  t.device_ = device;
  t.Allocate();
  return t;
}

Tensor Tensor::FromVector(const Shape& shape, std::vector<float> values) {
  if (static_cast<int64_t>(values.size()) != NumElements(shape)) {
    throw ShapeError("FromVector: " + std::to_string(values.size()) +
                     " values for shape " + ToString(shape));
  }
  Tensor t = Uninitialized(shape);
  std::copy(values.begin(), values.end(), t.device_data());
  return t;
}

Tensor Tensor::View(const Shape& shape) const {
  if (NumElements(shape) != numel()) {
    throw ShapeError("view: cannot view shape " + ToString(shape_) + " as " +
                     ToString(shape));
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::ViewAt(int64_t offset, const Shape& shape) const {
  if (!defined()) throw ShapeError("view: the tensor is undefined");
  const int64_t count = NumElements(shape);
  if (offset < 0 || count < 0 || offset > numel() - count) {
    throw ShapeError("view: " + std::to_string(count) + " elements at " +
                     std::to_string(offset) + " do not fit in a tensor of " +
                     ToString(shape_));
  }
  Tensor t = *this;
  // Shares the control block (and so the allocation) of storage_.
  t.storage_ = std::shared_ptr<float[]>(storage_, storage_.get() + offset);
  t.shape_ = shape;
  return t;
}

Tensor Tensor::Clone() const {
  Tensor t = Uninitialized(shape_, device_);
  if (device_.is_cuda()) {
    GpuBackendFor(device_).CopyDeviceToDevice(device_.index, t.device_data(),
                                              device_data(), numel());
  } else {
    std::copy(device_data(), device_data() + numel(), t.device_data());
  }
  return t;
}

Tensor Tensor::To(Device device) const {
  if (device == device_) return *this;
  Tensor t = Uninitialized(shape_, device);
  if (device_.is_cpu() && device.is_cpu()) {
    std::copy(device_data(), device_data() + numel(), t.device_data());
  } else if (device.is_cuda() && device_.is_cpu()) {
    GpuBackendFor(device).CopyHostToDevice(device.index, t.device_data(),
                                           device_data(), numel());
  } else if (device.is_cpu()) {
    GpuBackendFor(device_).CopyDeviceToHost(device_.index, t.device_data(),
                                            device_data(), numel());
  } else {
    // Between GPUs through the host: simple, and not on a training path.
    t = To(Device::Cpu()).To(device);
  }
  return t;
}

void Tensor::Fill(float value) {
  if (device_.is_cuda()) {
    GpuBackendFor(device_).Fill(device_.index, device_data(), numel(), value);
  } else {
    std::fill(device_data(), device_data() + numel(), value);
  }
}

void CopyElements(const Tensor& src, int64_t src_offset, Tensor& dst,
                  int64_t dst_offset, int64_t count) {
  if (src.device() != dst.device() &&
      (src.device().is_cuda() || dst.device().is_cuda())) {
    throw DeviceError("copy elements: from " + ToString(src.device()) + " to " +
                      ToString(dst.device()) +
                      "; both tensors must be on one device");
  }
  if (count < 0 || src_offset < 0 || dst_offset < 0 ||
      src_offset + count > src.numel() || dst_offset + count > dst.numel()) {
    throw std::out_of_range("copy elements: " + std::to_string(count) +
                            " from offset " + std::to_string(src_offset) +
                            " of " + std::to_string(src.numel()) +
                            " to offset " + std::to_string(dst_offset) +
                            " of " + std::to_string(dst.numel()));
  }
  if (count == 0) return;
  const float* from = src.device_data() + src_offset;
  float* to = dst.device_data() + dst_offset;
  if (dst.device().is_cuda()) {
    GpuBackendFor(dst.device())
        .CopyDeviceToDevice(dst.device().index, to, from, count);
  } else {
    std::copy(from, from + count, to);
  }
}

void CopyFromHost(const float* src, Tensor& dst) {
  if (dst.numel() == 0) return;
  if (dst.device().is_cuda()) {
    GpuBackendFor(dst.device())
        .CopyHostToDevice(dst.device().index, dst.device_data(), src,
                          dst.numel());
  } else {
    std::copy(src, src + dst.numel(), dst.device_data());
  }
}

void CopyFromHostAsync(const float* src, Tensor& dst) {
  if (dst.numel() == 0) return;
  if (dst.device().is_cuda()) {
    GpuBackendFor(dst.device())
        .CopyHostToDeviceAsync(dst.device().index, dst.device_data(), src,
                               dst.numel());
  } else {
    std::copy(src, src + dst.numel(), dst.device_data());
  }
}

uint64_t HostWaitsForGpus() {
  const GpuBackend* gpu = RegisteredGpuBackend();
  return gpu == nullptr ? 0 : gpu->HostWaits();
}

void CopyToHost(const Tensor& src, float* dst) {
  if (src.numel() == 0) return;
  if (src.device().is_cuda()) {
    GpuBackendFor(src.device())
        .CopyDeviceToHost(src.device().index, dst, src.device_data(),
                          src.numel());
  } else {
    std::copy(src.device_data(), src.device_data() + src.numel(), dst);
  }
}

void Tensor::ThrowHostAccessToGpu() const {
  throw DeviceError("host code read the storage of a tensor on " +
                    ToString(device_) + " (shape " + ToString(shape_) +
                    "); copy it with To(Device::Cpu()) or CopyToHost, or "
                    "pass device_data() to GPU code");
}

void ExpectShape(const char* op, const char* what, const Tensor& tensor,
                 const Shape& expected) {
  bool ok = tensor.rank() == static_cast<int>(expected.size());
  for (size_t i = 0; ok && i < expected.size(); ++i) {
    ok = expected[i] < 0 || expected[i] == tensor.dim(static_cast<int>(i));
  }
  if (!ok) {
    throw ShapeError(std::string(op) + ": " + what + " has shape " +
                     ToString(tensor.shape()) + ", expected " +
                     ToString(expected));
  }
}

}  // namespace ringlet::nn
