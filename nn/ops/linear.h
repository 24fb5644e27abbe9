// Fully connected layer: y[N, out] = x[N, in] . w[in, out] + b[out].
// (w is in x out, as d2l's from-scratch parameters W3 (800, 128).)
#ifndef RINGLET_NN_OPS_LINEAR_H_
#define RINGLET_NN_OPS_LINEAR_H_

#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// `b` may be undefined (no bias).
Tensor LinearForward(const Tensor& x, const Tensor& w, const Tensor& b);

struct LinearGrads {
  Tensor dx, dw, db;  // db undefined without bias.
};
LinearGrads LinearBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy);

// Implementations per device type (kernel_table.h), given checked shapes.
// `compute` is the type the products take (autocast.h): float32 with
// float32 operands, or bfloat16 with operands of either type (the kernel
// converts them), y then bfloat16; gradients float32 (dx rounded to
// bfloat16 by the front).
namespace kernels {
inline KernelTable<Tensor(const Tensor& x, const Tensor& w, const Tensor& b,
                          DType compute)>
    linear_forward{"linear"};
inline KernelTable<LinearGrads(const Tensor& x, const Tensor& w, bool has_bias,
                               const Tensor& dy, DType compute)>
    linear_backward{"linear backward"};
}  // namespace kernels

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_LINEAR_H_
