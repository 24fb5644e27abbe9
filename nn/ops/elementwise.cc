#include "nn/ops/elementwise.h"

#include <algorithm>
#include <cmath>

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/gpu_ops.h"
#include "nn/ops/non_finite.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {

namespace {

// Elements per thread below which a thread costs more than it saves.
constexpr int64_t kGrain = int64_t{1} << 15;

// out = x + z over bfloat16 bits, each sum in float32 and rounded once
// (autocast.h), a row of the op's threads at a time. `out` may be `x`.
void AddBf16(const uint16_t* x, const uint16_t* z, uint16_t* out, int64_t n) {
  ParallelForElements(n, kGrain, [x, z, out](int64_t begin, int64_t end) {
    float row[1024], other[1024];
    for (int64_t i = begin; i < end; i += 1024) {
      const int64_t count = std::min<int64_t>(1024, end - i);
      Bf16ToFloat(x + i, row, count);
      Bf16ToFloat(z + i, other, count);
      for (int64_t j = 0; j < count; ++j) row[j] += other[j];
      FloatToBf16(row, out + i, count);
    }
  });
}

}  // namespace

Tensor Add(const Tensor& a, const Tensor& b) {
  ExpectShape("add", "second input", b, a.shape());
  if (a.dtype() == DType::kBFloat16 && b.dtype() == DType::kBFloat16 &&
      OpDeviceOfAnyType("add", {&a, &b}).is_cuda()) {
    return GpuOpsFor(a.device()).Add(a, b);
  }
  if (a.dtype() == DType::kBFloat16 && b.dtype() == DType::kBFloat16) {
    Tensor y = Tensor::Uninitialized(a.shape(), Device::Cpu(), a.dtype());
    AddBf16(a.bf16_data(), b.bf16_data(), y.bf16_data(), a.numel());
    return y;
  }
  if (a.dtype() == DType::kBFloat16 || b.dtype() == DType::kBFloat16) {
    // bfloat16 when both are, float32 when one is (autocast.h).
    const Tensor sum =
        Add(AsDType(a, DType::kFloat32), AsDType(b, DType::kFloat32));
    return a.dtype() == b.dtype() ? AsDType(sum, DType::kBFloat16) : sum;
  }
  const Device device = OpDevice("add", {&a, &b});
  if (device.is_cuda()) return GpuOpsFor(device).Add(a, b);
  Tensor y = Tensor::Uninitialized(a.shape());
  const float* x = a.data();
  const float* z = b.data();
  float* out = y.data();
  for (int64_t i = 0, n = a.numel(); i < n; ++i) out[i] = x[i] + z[i];
  return y;
}

void AddInPlace(Tensor& a, const Tensor& b) {
  ExpectShape("add", "second input", b, a.shape());
  if (a.dtype() == DType::kBFloat16 && b.dtype() == DType::kBFloat16) {
    // Activation gradients under autocast (a residual's two branches), in
    // their type; a float32 sum (a parameter's gradient) takes float32.
    if (OpDeviceOfAnyType("add", {&a, &b}).is_cuda()) {
      CopyElements(Add(a, b), 0, a, 0, a.numel());
    } else {
      AddBf16(a.bf16_data(), b.bf16_data(), a.bf16_data(), a.numel());
    }
    return;
  }
  const Device device = OpDevice("add", {&a, &b});
  if (device.is_cuda()) {
    GpuOpsFor(device).AddInPlace(a, b);
    return;
  }
  float* x = a.data();
  const float* z = b.data();
  ParallelForElements(a.numel(), kGrain, [x, z](int64_t begin, int64_t end) {
    float* __restrict to = x + begin;
    const float* __restrict from = z + begin;
    for (int64_t i = 0; i < end - begin; ++i) to[i] += from[i];
  });
}

void AddScaledInPlace(Tensor& a, const Tensor& b, float scale) {
  ExpectShape("add scaled", "second input", b, a.shape());
  const Device device = OpDevice("add scaled", {&a, &b});
  if (device.is_cuda()) {
    GpuOpsFor(device).AddScaledInPlace(a, b, scale);
    return;
  }
  float* x = a.data();
  const float* z = b.data();
  for (int64_t i = 0, n = a.numel(); i < n; ++i) x[i] += scale * z[i];
}

void DivideInPlace(Tensor& x, float divisor) {
  const Device device = OpDevice("scale", {&x});
  if (device.is_cuda()) {
    GpuOpsFor(device).DivideInPlace(x, divisor);
    return;
  }
  float* v = x.data();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) v[i] /= divisor;
}

void ScaleInPlace(Tensor& x, float factor) {
  const Device device = OpDevice("scale", {&x});
  if (device.is_cuda()) {
    GpuOpsFor(device).ScaleInPlace(x, factor);
    return;
  }
  float* v = x.data();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) v[i] *= factor;
}

double SumOfSquares(const std::vector<const Tensor*>& tensors) {
  if (tensors.empty()) return 0;
  const Device device = tensors.front()->device();
  for (const Tensor* t : tensors) {
    CommonDevice("sum of squares", {device, t->device()});
  }
  if (device.is_cuda()) return GpuOpsFor(device).SumOfSquares(tensors);
  double sum = 0;
  for (const Tensor* t : tensors) {
    const float* v = t->data();
    for (int64_t i = 0, n = t->numel(); i < n; ++i) {
      sum += static_cast<double>(v[i]) * v[i];
    }
  }
  return sum;
}

int64_t CountNonFinite(const std::vector<const Tensor*>& tensors) {
  const NonFiniteCounts counts = QueueCountNonFinite(tensors);
  int64_t total = 0;
  for (int64_t count : counts.Read()) total += count;
  return total;
}

void ZeroAll(const std::vector<Tensor*>& tensors) {
  if (tensors.empty()) return;
  const Device device = tensors.front()->device();
  for (const Tensor* t : tensors) {
    CommonDevice("zero", {device, t->device()});
  }
  if (device.is_cuda()) {
    GpuOpsFor(device).ZeroAll(tensors);
    return;
  }
  for (Tensor* t : tensors) t->Fill(0.0f);
}

Tensor Flatten(const Tensor& x) {
  if (x.rank() < 1) throw ShapeError("flatten: input is a scalar");
  int64_t features = 1;  // Not numel / N: an empty batch has features too.
  for (int i = 1; i < x.rank(); ++i) features *= x.dim(i);
  // Features in NCHW order whatever the input's memory format (a linear
  // layer's weights are laid out for it).
  return x.ToMemoryFormat(MemoryFormat::kContiguous).View({x.dim(0), features});
}

}  // namespace ringlet::nn
