#include "nn/ops/autocast.h"

#include <atomic>

#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

std::atomic<DType> g_autocast{DType::kFloat32};

}  // namespace

void SetAutocast(DType compute) { g_autocast.store(compute); }

DType autocast() { return g_autocast.load(); }

bool ComputesInBf16(std::initializer_list<const Tensor*> operands) {
  if (autocast() == DType::kBFloat16) return true;
  for (const Tensor* t : operands) {
    if (t->defined() && t->dtype() == DType::kBFloat16) return true;
  }
  return false;
}

Tensor AsDType(const Tensor& t, DType dtype) {
  if (!t.defined() || t.dtype() == dtype) return t;
  if (t.device().is_cuda()) return t.To(dtype);
  // On a CPU device, by its op threads: every activation of a bfloat16
  // step passes through here, and one thread alone left the others idle
  // for a third of a ResNet-18 step.
  Tensor out = Tensor::Uninitialized(t.shape(), t.device(), dtype);
  const int64_t grain = int64_t{1} << 16;
  if (dtype == DType::kBFloat16) {
    const float* in = t.device_data();
    uint16_t* to = out.bf16_data();
    ParallelForElements(t.numel(), grain, [in, to](int64_t begin, int64_t end) {
      FloatToBf16(in + begin, to + begin, end - begin);
    });
  } else {
    const uint16_t* in = t.bf16_data();
    float* to = out.device_data();
    ParallelForElements(t.numel(), grain, [in, to](int64_t begin, int64_t end) {
      Bf16ToFloat(in + begin, to + begin, end - begin);
    });
  }
  return out;
}

Tensor RoundedToBf16(const Tensor& t) {
  if (!t.defined()) return t;
  // A bfloat16 tensor's values are bfloat16 already: widening is exact.
  if (t.dtype() == DType::kBFloat16) return AsDType(t, DType::kFloat32);
  return AsDType(AsDType(t, DType::kBFloat16), DType::kFloat32);
}

}  // namespace ringlet::nn
