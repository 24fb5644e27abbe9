// 2-D convolution (cross-correlation, as in every framework) by im2col and
// a matrix product per image.
//
// Shape letters: N images, C input channels, H x W input, K output
// channels, R x S kernel, P x Q output, with
//   P = (H + 2 padding - R) / stride + 1, Q likewise.
#ifndef RINGLET_NN_OPS_CONV2D_H_
#define RINGLET_NN_OPS_CONV2D_H_

#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

struct Conv2dParams {
  int stride = 1;
  int padding = 0;
};

// x [N, C, H, W], w [K, C, R, S], b [K] or undefined -> y [N, K, P, Q].
// Throws ShapeError naming the shapes for mismatched channels, a kernel
// larger than the padded input, or a non-positive stride or negative padding.
Tensor Conv2dForward(const Tensor& x, const Tensor& w, const Tensor& b,
                     const Conv2dParams& params);
// ReluForward(Conv2dForward(...)), bit for bit, in one pass over the output
// where oneDNN runs it (its ReLU post-op); the ReLU's backward stays the
// caller's (ReluBackward with this output, then Conv2dBackward).
Tensor Conv2dReluForward(const Tensor& x, const Tensor& w, const Tensor& b,
                         const Conv2dParams& params);

struct Conv2dGrads {
  Tensor dx, dw, db;  // db undefined without bias.
};
// With need_dx false (a network's first layer), dx is left undefined and
// its cost, a matrix product and col2im per image, is saved.
Conv2dGrads Conv2dBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy, const Conv2dParams& params,
                           bool need_dx = true);

// w as the convolutions of input x compute with it: bfloat16 where
// autocast's kernels take it (GPUs, oneDNN's bfloat16 CPUs), channels-last
// where a GPU runs x channels-last; else w itself. Either op given it
// computes the same values as given w; a layer makes it once per forward
// and hands it to the backward too, so a step converts each weight once
// (torch.autocast's cast cache). Its gradient dw is float32 and NCHW.
Tensor Conv2dComputeWeight(const Tensor& x, const Tensor& w);

// Implementations per device type (kernel_table.h), given checked shapes.
// `compute` is the type the products take (autocast.h): float32 with
// float32 operands, or bfloat16 with operands of either type (the kernel
// converts them or computes the reference), y then bfloat16; gradients
// float32 (dx rounded to bfloat16 by the front). The forward applies the
// ReLU when `relu` is set.
namespace kernels {
inline KernelTable<Tensor(const Tensor& x, const Tensor& w, const Tensor& b,
                          const Conv2dParams& params, DType compute, bool relu)>
    conv2d_forward{"conv2d"};
inline KernelTable<Conv2dGrads(const Tensor& x, const Tensor& w, bool has_bias,
                               const Tensor& dy, const Conv2dParams& params,
                               bool need_dx, DType compute)>
    conv2d_backward{"conv2d backward"};
inline KernelTable<Tensor(const Tensor& x, const Tensor& w, DType compute)>
    conv2d_compute_weight{"conv2d"};
}  // namespace kernels

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_CONV2D_H_
