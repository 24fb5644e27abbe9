// Elementwise sums and reshapes.
#ifndef RINGLET_NN_OPS_ELEMENTWISE_H_
#define RINGLET_NN_OPS_ELEMENTWISE_H_

#include <cstdint>
#include <vector>

#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// a + b, same shapes (the residual connection). Its backward passes the
// gradient unchanged to both inputs.
Tensor Add(const Tensor& a, const Tensor& b);
// a += b, same shapes (gradient accumulation): both float32, or both
// bfloat16 (activation gradients under autocast).
void AddInPlace(Tensor& a, const Tensor& b);
// y = ReLU(y + residual) in one pass (residual undefined: no add; relu
// false: no ReLU), residual of y's type and shape: Add then ReluForward's
// values, bit for bit. A batch norm's epilogue on its fresh output.
void AddReluInPlace(Tensor& y, const Tensor& residual, bool relu);
// a += scale * b, same shapes (a running mean shifted by a folded bias).
void AddScaledInPlace(Tensor& a, const Tensor& b, float scale);
// x /= divisor (a loss gradient made the mean over the whole batch).
void DivideInPlace(Tensor& x, float divisor);
// x *= factor (gradients scaled down by clipping).
void ScaleInPlace(Tensor& x, float factor);
// The sum of every element's square over `tensors` (all on one device), in
// double and in a fixed order, so replicas holding the same values get the
// same bits. On a GPU: partial sums per tensor, one read back.
double SumOfSquares(const std::vector<const Tensor*>& tensors);
// How many elements of `tensors` (all on one device) are nan or infinite.
// On a GPU: QueueCountNonFinite (non_finite.h), then one read back.
int64_t CountNonFinite(const std::vector<const Tensor*>& tensors);

// Every tensor (all on one device) set to 0; on a GPU one launch for up to
// 48 tensors (a model's gradients), not one each.
void ZeroAll(const std::vector<Tensor*>& tensors);
// [N, ...] -> [N, prod(...)], the features in NCHW order: sharing storage
// (a channels-last input is converted first); backward is a View back.
Tensor Flatten(const Tensor& x);

// Implementations per device type (kernel_table.h), given checked
// arguments on one device: add's and add_in_place's of one type (float32 or
// bfloat16), the others float32; the lists are not empty.
namespace kernels {
inline KernelTable<Tensor(const Tensor& a, const Tensor& b)> add{"add"};
inline KernelTable<void(Tensor& a, const Tensor& b)> add_in_place{"add"};
inline KernelTable<void(Tensor& y, const Tensor& residual, bool relu)>
    add_relu_in_place{"add relu"};
inline KernelTable<void(Tensor& a, const Tensor& b, float scale)>
    add_scaled_in_place{"add scaled"};
inline KernelTable<void(Tensor& x, float divisor)> divide_in_place{"divide"};
inline KernelTable<void(Tensor& x, float factor)> scale_in_place{"scale"};
inline KernelTable<double(const std::vector<const Tensor*>& tensors)>
    sum_of_squares{"sum of squares"};
inline KernelTable<void(const std::vector<Tensor*>& tensors)> zero_all{"zero"};
}  // namespace kernels

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_ELEMENTWISE_H_
