// CPU convolutions through oneDNN, which picks kernels for the running CPU
// (AVX2, AVX-512, AMX) at run time. Same contract as nn/ops/conv2d.h, whose
// dispatch calls these with shapes it has already checked. x, w and dy are
// all float32, or all bfloat16 (where SupportsBf16() says the CPU has the
// instructions); the bias, dw and db are float32 either way, y and dx of
// x's type.
//
// Threads and determinism: for the output and the input gradient a batch
// is cut into chunks of images whose size depends on the shapes only; each
// op thread (nn/ops/op_threads.h) runs whole chunks, every oneDNN call on one
// OpenMP thread. So those do not depend on the thread count, bit for bit.
// Weight and bias gradients are summed per thread (each thread's run of
// images in as few oneDNN calls as its buffers allow), then in thread
// order, so they differ across thread counts by float32 rounding only, as
// the Eigen path's do.
#ifndef RINGLET_NN_OPS_ONEDNN_CONV2D_ONEDNN_H_
#define RINGLET_NN_OPS_ONEDNN_CONV2D_ONEDNN_H_

#include "nn/ops/conv2d.h"
#include "nn/tensor.h"

namespace ringlet::nn::onednn {

// Whether this CPU runs oneDNN's bfloat16 convolutions natively
// (AVX512_BF16 or AMX-BF16, read at run time).
bool SupportsBf16();

// Whether these shapes' forward pass takes the ReLU after it as a post-op
// (conv_plans.h's ReluRunsAsPostOp); else the caller runs ReluForward.
bool ReluRunsAsPostOp(const Tensor& x, const Tensor& w,
                      const Conv2dParams& params);
// With `relu` (only where ReluRunsAsPostOp), the ReLU after the
// convolution runs as its post-op.
Tensor Conv2dForward(const Tensor& x, const Tensor& w, const Tensor& b,
                     const Conv2dParams& params, bool relu = false);

Conv2dGrads Conv2dBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy, const Conv2dParams& params,
                           bool need_dx);

}  // namespace ringlet::nn::onednn

#endif  // RINGLET_NN_OPS_ONEDNN_CONV2D_ONEDNN_H_
