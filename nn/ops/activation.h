// ReLU: y = max(x, 0); its gradient passes where x > 0.
#ifndef RINGLET_NN_OPS_ACTIVATION_H_
#define RINGLET_NN_OPS_ACTIVATION_H_

#include "nn/tensor.h"

namespace ringlet::nn {

Tensor ReluForward(const Tensor& x);
// `y` is ReluForward's output (y > 0 exactly where x > 0).
Tensor ReluBackward(const Tensor& y, const Tensor& dy);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_ACTIVATION_H_
