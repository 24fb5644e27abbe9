#include "nn/ops/autocast.h"

#include "nn/compute_options.h"

namespace ringlet::nn {

DType autocast() { return CurrentComputeOptions().autocast; }

bool ComputesInBf16(std::initializer_list<const Tensor*> operands) {
  if (autocast() == DType::kBFloat16) return true;
  for (const Tensor* t : operands) {
    if (t->defined() && t->dtype() == DType::kBFloat16) return true;
  }
  return false;
}

Tensor AsDType(const Tensor& t, DType dtype) {
  if (!t.defined() || t.dtype() == dtype) return t;
  return kernels::as_dtype.For(t.device())(t, dtype);
}

Tensor RoundedToBf16(const Tensor& t) {
  if (!t.defined()) return t;
  // A bfloat16 tensor's values are bfloat16 already: widening is exact.
  if (t.dtype() == DType::kBFloat16) return AsDType(t, DType::kFloat32);
  return AsDType(AsDType(t, DType::kBFloat16), DType::kFloat32);
}

}  // namespace ringlet::nn
