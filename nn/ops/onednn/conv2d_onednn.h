// CPU convolutions through oneDNN, which picks kernels for the running CPU
// (AVX2, AVX-512, AMX) at run time. Same contract as nn/ops/conv2d.h, whose
// dispatch calls these with shapes it has already checked.
//
// Threads and determinism: a batch is cut into chunks of images whose size
// depends on the shapes only; each op thread (nn/ops/parallel.h) runs whole
// chunks, every oneDNN call on one OpenMP thread. So the output and the
// input gradient do not depend on the thread count, bit for bit; weight and
// bias gradients are summed per thread, then in thread order, so they
// differ across thread counts only by float rounding (as the Eigen path).
#ifndef RINGLET_NN_OPS_ONEDNN_CONV2D_ONEDNN_H_
#define RINGLET_NN_OPS_ONEDNN_CONV2D_ONEDNN_H_

#include "nn/ops/conv2d.h"
#include "nn/tensor.h"

namespace ringlet::nn::onednn {

Tensor Conv2dForward(const Tensor& x, const Tensor& w, const Tensor& b,
                     const Conv2dParams& params);

Conv2dGrads Conv2dBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy, const Conv2dParams& params,
                           bool need_dx);

}  // namespace ringlet::nn::onednn

#endif  // RINGLET_NN_OPS_ONEDNN_CONV2D_ONEDNN_H_
