// Elementwise sums and reshapes.
#ifndef RINGLET_NN_OPS_ELEMENTWISE_H_
#define RINGLET_NN_OPS_ELEMENTWISE_H_

#include "nn/tensor.h"

namespace ringlet::nn {

// a + b, same shapes (the residual connection). Its backward passes the
// gradient unchanged to both inputs.
Tensor Add(const Tensor& a, const Tensor& b);
// a += b, same shapes (gradient accumulation).
void AddInPlace(Tensor& a, const Tensor& b);
// [N, ...] -> [N, prod(...)], sharing storage; backward is a View back.
Tensor Flatten(const Tensor& x);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_ELEMENTWISE_H_
