// Elementwise sums and reshapes.
#ifndef RINGLET_NN_OPS_ELEMENTWISE_H_
#define RINGLET_NN_OPS_ELEMENTWISE_H_

#include <cstdint>
#include <vector>

#include "nn/tensor.h"

namespace ringlet::nn {

// a + b, same shapes (the residual connection). Its backward passes the
// gradient unchanged to both inputs.
Tensor Add(const Tensor& a, const Tensor& b);
// a += b, same shapes (gradient accumulation): both float32, or both
// bfloat16 (activation gradients under autocast).
void AddInPlace(Tensor& a, const Tensor& b);
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

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_ELEMENTWISE_H_
