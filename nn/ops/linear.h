// Fully connected layer: y[N, out] = x[N, in] . w[in, out] + b[out].
// (w is in x out, as d2l's from-scratch parameters W3 (800, 128).)
#ifndef RINGLET_NN_OPS_LINEAR_H_
#define RINGLET_NN_OPS_LINEAR_H_

#include "nn/tensor.h"

namespace ringlet::nn {

// `b` may be undefined (no bias).
Tensor LinearForward(const Tensor& x, const Tensor& w, const Tensor& b);

struct LinearGrads {
  Tensor dx, dw, db;  // db undefined without bias.
};
LinearGrads LinearBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_LINEAR_H_
