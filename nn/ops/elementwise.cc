#include "nn/ops/elementwise.h"

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/non_finite.h"

namespace ringlet::nn {
namespace {

// The one device of a list's tensors (the first's); a DeviceError naming
// `op` for a tensor elsewhere.
template <typename T>
Device ListDevice(const char* op, const std::vector<T*>& tensors) {
  const Device device = tensors.front()->device();
  for (const Tensor* t : tensors) CommonDevice(op, {device, t->device()});
  return device;
}

}  // namespace

Tensor Add(const Tensor& a, const Tensor& b) {
  ExpectShape("add", "second input", b, a.shape());
  if (a.dtype() != b.dtype()) {
    // One bfloat16 and one float32 input sum in float32 (autocast.h).
    return Add(AsDType(a, DType::kFloat32), AsDType(b, DType::kFloat32));
  }
  return kernels::add.For(OpDeviceOfAnyType("add", {&a, &b}))(a, b);
}

void AddInPlace(Tensor& a, const Tensor& b) {
  ExpectShape("add", "second input", b, a.shape());
  // Both float32 (a parameter's gradient), or both bfloat16 (a residual's
  // two branches' activation gradients under autocast).
  const Device device = a.dtype() == b.dtype()
                            ? OpDeviceOfAnyType("add", {&a, &b})
                            : OpDevice("add", {&a, &b});
  kernels::add_in_place.For(device)(a, b);
}

void AddReluInPlace(Tensor& y, const Tensor& residual, bool relu) {
  if (residual.defined()) {
    ExpectShape("add relu", "residual", residual, y.shape());
    if (residual.dtype() != y.dtype()) OpDevice("add relu", {&y, &residual});
  }
  kernels::add_relu_in_place.For(
      OpDeviceOfAnyType("add relu", {&y, &residual}))(y, residual, relu);
}

void AddScaledInPlace(Tensor& a, const Tensor& b, float scale) {
  ExpectShape("add scaled", "second input", b, a.shape());
  kernels::add_scaled_in_place.For(OpDevice("add scaled", {&a, &b}))(a, b,
                                                                     scale);
}

void DivideInPlace(Tensor& x, float divisor) {
  kernels::divide_in_place.For(OpDevice("scale", {&x}))(x, divisor);
}

void ScaleInPlace(Tensor& x, float factor) {
  kernels::scale_in_place.For(OpDevice("scale", {&x}))(x, factor);
}

double SumOfSquares(const std::vector<const Tensor*>& tensors) {
  if (tensors.empty()) return 0;
  return kernels::sum_of_squares.For(ListDevice("sum of squares", tensors))(
      tensors);
}

int64_t CountNonFinite(const std::vector<const Tensor*>& tensors) {
  const NonFiniteCounts counts = QueueCountNonFinite(tensors);
  int64_t total = 0;
  for (int64_t count : counts.Read()) total += count;
  return total;
}

void ZeroAll(const std::vector<Tensor*>& tensors) {
  if (tensors.empty()) return;
  kernels::zero_all.For(ListDevice("zero", tensors))(tensors);
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
