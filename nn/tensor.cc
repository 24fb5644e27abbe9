#include "nn/tensor.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
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

namespace {

// For each of `batch` matrices: dst[b][j][i] = src[b][i][j], in tiles that
// stay in cache.
template <typename T>
void TransposeOnHost(const T* src, T* dst, int64_t batch, int64_t rows,
                     int64_t cols) {
  constexpr int64_t kTile = 32;
  for (int64_t b = 0; b < batch; ++b) {
    const T* from = src + b * rows * cols;
    T* to = dst + b * rows * cols;
    for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        const int64_t i1 = std::min(rows, i0 + kTile);
        const int64_t j1 = std::min(cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          for (int64_t j = j0; j < j1; ++j)
            to[j * rows + i] = from[i * cols + j];
        }
      }
    }
  }
}

// Whether a [N, C, H, W] shape orders its elements the same in NCHW and
// NHWC.
bool OrdersAgree(const Shape& shape) {
  return shape.size() != 4 || shape[1] == 1 || shape[2] * shape[3] == 1;
}

}  // namespace

bool Tensor::StoredChannelsLast() const {
  return memory_format_ == MemoryFormat::kChannelsLast && !OrdersAgree(shape_);
}

int64_t Tensor::nbytes() const {
  return numel() * static_cast<int64_t>(ElementSize(dtype_));
}

void Tensor::Allocate() {
  for (int64_t d : shape_) {
    if (d < 0) {
      throw ShapeError("tensor shape " + ToString(shape_) +
                       " has a negative dimension");
    }
  }
  const int64_t elements = NumElements(shape_);
  const int64_t element_size = static_cast<int64_t>(ElementSize(dtype_));
  // Bytes in a 64-bit count too (no memory comes near).
  if (elements > INT64_MAX / element_size) {
    throw ShapeError("tensor shape " + ToString(shape_) + " needs " +
                     std::to_string(elements) + " " + ToString(dtype_) +
                     " elements, more bytes than any memory holds");
  }
  const size_t bytes = static_cast<size_t>(elements * element_size);
  if (device_.is_cuda()) {
    storage_ = GpuBackendFor(device_).Allocate(device_.index, bytes);
    return;
  }
  // 64-byte aligned: vectorised kernels (Eigen's reductions among them)
  // split work by alignment, so equal inputs at differently aligned
  // addresses could round differently. Aligned storage keeps every result
  // a function of the values alone, which reproducibility needs. Large
  // blocks are kept for reuse when freed (host_block_cache.h).
  const HostBlock block = AllocateHostBlock(std::max<size_t>(1, bytes));
  storage_ = std::shared_ptr<std::byte[]>(
      static_cast<std::byte*>(block.data),
      [block](std::byte*) { FreeHostBlock(block); });
}

Tensor::Tensor(const Shape& shape, Device device, DType dtype)
    : shape_(shape), device_(device), dtype_(dtype) {
  Allocate();
  Fill(0.0f);
}

Tensor Tensor::Uninitialized(const Shape& shape, Device device, DType dtype,
                             MemoryFormat format) {
  if (format == MemoryFormat::kChannelsLast && shape.size() != 4) {
    throw ShapeError("tensor shape " + ToString(shape) +
                     ": channels-last needs a rank-4 [N, C, H, W] shape");
  }
  Tensor t;
  t.shape_ = shape;
  t.device_ = device;
  t.dtype_ = dtype;
  t.memory_format_ = format;
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
  ThrowIfStoredChannelsLast("view as " + ToString(shape));
  Tensor t = *this;
  t.shape_ = shape;
  t.memory_format_ = MemoryFormat::kContiguous;
  return t;
}

void Tensor::ThrowIfStoredChannelsLast(const std::string& what) const {
  if (!StoredChannelsLast()) return;
  throw ShapeError(what + ": the channels-last tensor of shape " +
                   ToString(shape_) +
                   " stores its elements in [N, H, W, C] order; convert it "
                   "with ToMemoryFormat(MemoryFormat::kContiguous) first");
}

Tensor Tensor::ViewAt(int64_t offset, const Shape& shape) const {
  if (!defined()) throw ShapeError("view: the tensor is undefined");
  const int64_t count = NumElements(shape);
  if (offset < 0 || count < 0 || offset > numel() - count) {
    throw ShapeError("view: " + std::to_string(count) + " elements at " +
                     std::to_string(offset) + " do not fit in a tensor of " +
                     ToString(shape_));
  }
  ThrowIfStoredChannelsLast("view of " + std::to_string(count) +
                            " elements at " + std::to_string(offset));
  Tensor t = *this;
  // Shares the control block (and so the allocation) of storage_.
  t.storage_ = std::shared_ptr<std::byte[]>(
      storage_, storage_.get() + offset * ElementSize(dtype_));
  t.shape_ = shape;
  t.memory_format_ = MemoryFormat::kContiguous;
  return t;
}

Tensor Tensor::Clone() const {
  Tensor t = Uninitialized(shape_, device_, dtype_, memory_format_);
  if (device_.is_cuda()) {
    GpuBackendFor(device_).CopyDeviceToDevice(device_.index, t.raw_data(),
                                              raw_data(), nbytes());
  } else {
    std::memcpy(t.raw_data(), raw_data(), nbytes());
  }
  return t;
}

Tensor Tensor::To(Device device) const {
  if (device == device_) return *this;
  Tensor t = Uninitialized(shape_, device, dtype_, memory_format_);
  if (device_.is_cpu() && device.is_cpu()) {
    std::memcpy(t.raw_data(), raw_data(), nbytes());
  } else if (device.is_cuda() && device_.is_cpu()) {
    GpuBackendFor(device).CopyHostToDevice(device.index, t.raw_data(),
                                           raw_data(), nbytes());
  } else if (device.is_cpu()) {
    GpuBackendFor(device_).CopyDeviceToHost(device_.index, t.raw_data(),
                                            raw_data(), nbytes());
  } else {
    // Between GPUs through the host: simple, and not on a training path.
    t = To(Device::Cpu()).To(device);
  }
  return t;
}

Tensor Tensor::To(DType dtype) const {
  if (dtype == dtype_ || !defined()) return *this;
  Tensor t = Uninitialized(shape_, device_, dtype, memory_format_);
  if (device_.is_cuda()) {
    GpuBackendFor(device_).Convert(device_.index, raw_data(), dtype_,
                                   t.raw_data(), dtype, numel());
  } else if (dtype == DType::kBFloat16) {
    FloatToBf16(device_data(), t.bf16_data(), numel());
  } else {
    Bf16ToFloat(bf16_data(), t.device_data(), numel());
  }
  return t;
}

Tensor Tensor::ToMemoryFormat(MemoryFormat format) const {
  if (format == memory_format_ || !defined()) return *this;
  if (format == MemoryFormat::kChannelsLast && rank() != 4) {
    throw ShapeError("to channels-last: a tensor of shape " + ToString(shape_) +
                     "; channels-last needs a rank-4 [N, C, H, W] shape");
  }
  if (OrdersAgree(shape_)) {  // The same bytes: relabelled.
    Tensor t = *this;
    t.memory_format_ = format;
    return t;
  }
  Tensor t = Uninitialized(shape_, device_, dtype_, format);
  const int64_t n = dim(0), c = dim(1), hw = dim(2) * dim(3);
  // NCHW to NHWC transposes each image's C x HW matrix; back, its HW x C.
  const bool to_last = format == MemoryFormat::kChannelsLast;
  const int64_t rows = to_last ? c : hw, cols = to_last ? hw : c;
  if (device_.is_cuda()) {
    GpuBackendFor(device_).TransposeBatched(
        device_.index, raw_data(), t.raw_data(), dtype_, n, rows, cols);
  } else if (dtype_ == DType::kBFloat16) {
    TransposeOnHost(bf16_data(), t.bf16_data(), n, rows, cols);
  } else {
    TransposeOnHost(device_data(), t.device_data(), n, rows, cols);
  }
  return t;
}

void Tensor::Fill(float value) {
  if (device_.is_cuda()) {
    GpuBackendFor(device_).Fill(device_.index, raw_data(), dtype_, numel(),
                                value);
  } else if (dtype_ == DType::kBFloat16) {
    uint16_t bits;
    FloatToBf16(&value, &bits, 1);
    std::fill(bf16_data(), bf16_data() + numel(), bits);
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
  if (src.dtype() != dst.dtype()) {
    throw DTypeError(std::string("copy elements: from ") +
                     ToString(src.dtype()) + " to " + ToString(dst.dtype()) +
                     "; convert with Tensor::To(DType) first");
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
  const size_t size = ElementSize(src.dtype());
  const auto* from =
      static_cast<const std::byte*>(src.raw_data()) + src_offset * size;
  auto* to = static_cast<std::byte*>(dst.raw_data()) + dst_offset * size;
  if (dst.device().is_cuda()) {
    GpuBackendFor(dst.device())
        .CopyDeviceToDevice(dst.device().index, to, from, count * size);
  } else {
    std::memmove(to, from, count * size);
  }
}

void ConvertElements(const Tensor& src, Tensor& dst) {
  if (src.device() != dst.device() &&
      (src.device().is_cuda() || dst.device().is_cuda())) {
    throw DeviceError("convert elements: from " + ToString(src.device()) +
                      " to " + ToString(dst.device()) +
                      "; both tensors must be on one device");
  }
  if (src.numel() != dst.numel()) {
    throw ShapeError("convert elements: " + std::to_string(src.numel()) +
                     " elements into " + std::to_string(dst.numel()));
  }
  if (src.dtype() == dst.dtype()) {
    CopyElements(src, 0, dst, 0, src.numel());
  } else if (dst.device().is_cuda()) {
    GpuBackendFor(dst.device())
        .Convert(dst.device().index, src.raw_data(), src.dtype(),
                 dst.raw_data(), dst.dtype(), static_cast<size_t>(src.numel()));
  } else if (dst.dtype() == DType::kBFloat16) {
    FloatToBf16(src.device_data(), dst.bf16_data(), src.numel());
  } else {
    Bf16ToFloat(src.bf16_data(), dst.device_data(), src.numel());
  }
}

void CopyFromHost(const float* src, Tensor& dst) {
  if (dst.numel() == 0) return;
  float* to = dst.device_data();  // A DTypeError unless float32.
  std::vector<float> stored;
  if (dst.StoredChannelsLast()) {  // NCHW values, stored in dst's order.
    stored.resize(dst.numel());
    TransposeOnHost(src, stored.data(), dst.dim(0), dst.dim(1),
                    dst.dim(2) * dst.dim(3));
    src = stored.data();
  }
  if (dst.device().is_cuda()) {
    GpuBackendFor(dst.device())
        .CopyHostToDevice(dst.device().index, to, src, dst.nbytes());
  } else {
    std::copy(src, src + dst.numel(), to);
  }
}

void CopyFromHostAsync(const float* src, Tensor& dst) {
  if (dst.numel() == 0) return;
  dst.ThrowIfStoredChannelsLast("copy from host, queued");
  float* to = dst.device_data();
  if (dst.device().is_cuda()) {
    GpuBackendFor(dst.device())
        .CopyHostToDeviceAsync(dst.device().index, to, src, dst.nbytes());
  } else {
    std::copy(src, src + dst.numel(), to);
  }
}

uint64_t HostWaitsForGpus() {
  const GpuBackend* gpu = RegisteredGpuBackend();
  return gpu == nullptr ? 0 : gpu->HostWaits();
}

void CopyToHost(const Tensor& src, float* dst) {
  if (src.numel() == 0) return;
  if (src.StoredChannelsLast()) {
    CopyToHost(src.ToMemoryFormat(MemoryFormat::kContiguous), dst);
    return;
  }
  const float* from = src.device_data();
  if (src.device().is_cuda()) {
    GpuBackendFor(src.device())
        .CopyDeviceToHost(src.device().index, dst, from, src.nbytes());
  } else {
    std::copy(from, from + src.numel(), dst);
  }
}

void Tensor::ThrowHostAccessToGpu() const {
  throw DeviceError("host code read the storage of a tensor on " +
                    ToString(device_) + " (shape " + ToString(shape_) +
                    "); copy it with To(Device::Cpu()) or CopyToHost, or "
                    "pass device_data() to GPU code");
}

void Tensor::ThrowWrongDType(DType wanted) const {
  throw DTypeError(std::string("a ") + ToString(dtype_) + " tensor (shape " +
                   ToString(shape_) + ") was read as " + ToString(wanted) +
                   "; convert it with To(DType::" +
                   (wanted == DType::kFloat32 ? "kFloat32" : "kBFloat16") +
                   ") or read it as its own type");
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
