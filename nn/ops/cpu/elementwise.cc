// Elementwise sums on CPU devices: bfloat16 sums in float32, each rounded
// once (autocast.h).
#include "nn/ops/elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "nn/ops/activation.h"
#include "nn/ops/autocast.h"
#include "nn/ops/non_finite.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

// Elements per thread below which a thread costs more than it saves.
constexpr int64_t kGrain = int64_t{1} << 15;

// out = x + z over bfloat16 bits, a row of the op's threads at a time.
// `out` may be `x`.
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

void AddInPlaceCpu(Tensor& a, const Tensor& b) {
  if (a.dtype() == DType::kBFloat16) {
    AddBf16(a.bf16_data(), b.bf16_data(), a.bf16_data(), a.numel());
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

Tensor AddCpu(const Tensor& a, const Tensor& b) {
  Tensor y = Tensor::Uninitialized(a.shape(), Device::Cpu(), a.dtype());
  if (a.dtype() == DType::kBFloat16) {
    AddBf16(a.bf16_data(), b.bf16_data(), y.bf16_data(), a.numel());
    return y;
  }
  const float* x = a.data();
  const float* z = b.data();
  float* out = y.data();
  for (int64_t i = 0, n = a.numel(); i < n; ++i) out[i] = x[i] + z[i];
  return y;
}

void AddReluInPlaceCpu(Tensor& y, const Tensor& residual, bool relu) {
  if (residual.defined()) AddInPlaceCpu(y, residual);
  if (relu) CopyElements(ReluForward(y), 0, y, 0, y.numel());
}

void AddScaledInPlaceCpu(Tensor& a, const Tensor& b, float scale) {
  float* x = a.data();
  const float* z = b.data();
  for (int64_t i = 0, n = a.numel(); i < n; ++i) x[i] += scale * z[i];
}

void DivideInPlaceCpu(Tensor& x, float divisor) {
  float* v = x.data();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) v[i] /= divisor;
}

void ScaleInPlaceCpu(Tensor& x, float factor) {
  float* v = x.data();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) v[i] *= factor;
}

double SumOfSquaresCpu(const std::vector<const Tensor*>& tensors) {
  double sum = 0;
  for (const Tensor* t : tensors) {
    const float* v = t->data();
    for (int64_t i = 0, n = t->numel(); i < n; ++i) {
      sum += static_cast<double>(v[i]) * v[i];
    }
  }
  return sum;
}

Tensor CountNonFiniteCpu(const std::vector<const Tensor*>& tensors,
                         std::vector<int64_t>* counts) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const float* v = tensors[i]->data();
    int64_t count = 0;
    for (int64_t j = 0, n = tensors[i]->numel(); j < n; ++j) {
      count += std::isfinite(v[j]) ? 0 : 1;
    }
    (*counts)[i] = count;
  }
  return Tensor();
}

void ZeroAllCpu(const std::vector<Tensor*>& tensors) {
  for (Tensor* t : tensors) t->Fill(0.0f);
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::add, DeviceType::kCpu, AddCpu);
RINGLET_REGISTER_KERNEL(kernels::add_in_place, DeviceType::kCpu, AddInPlaceCpu);
RINGLET_REGISTER_KERNEL(kernels::add_relu_in_place, DeviceType::kCpu,
                        AddReluInPlaceCpu);
RINGLET_REGISTER_KERNEL(kernels::add_scaled_in_place, DeviceType::kCpu,
                        AddScaledInPlaceCpu);
RINGLET_REGISTER_KERNEL(kernels::divide_in_place, DeviceType::kCpu,
                        DivideInPlaceCpu);
RINGLET_REGISTER_KERNEL(kernels::scale_in_place, DeviceType::kCpu,
                        ScaleInPlaceCpu);
RINGLET_REGISTER_KERNEL(kernels::sum_of_squares, DeviceType::kCpu,
                        SumOfSquaresCpu);
RINGLET_REGISTER_KERNEL(kernels::count_non_finite, DeviceType::kCpu,
                        CountNonFiniteCpu);
RINGLET_REGISTER_KERNEL(kernels::zero_all, DeviceType::kCpu, ZeroAllCpu);

}  // namespace ringlet::nn
