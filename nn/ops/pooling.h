// Average pooling (kernel x kernel windows, no padding) and global average
// pooling over each channel's plane.
#ifndef RINGLET_NN_OPS_POOLING_H_
#define RINGLET_NN_OPS_POOLING_H_

#include "nn/tensor.h"

namespace ringlet::nn {

// x [N, C, H, W] -> [N, C, (H - k) / stride + 1, (W - k) / stride + 1].
Tensor AvgPool2dForward(const Tensor& x, int kernel, int stride);
Tensor AvgPool2dBackward(const Shape& x_shape, const Tensor& dy, int kernel,
                         int stride);

// x [N, C, H, W] -> [N, C].
Tensor GlobalAvgPoolForward(const Tensor& x);
Tensor GlobalAvgPoolBackward(const Shape& x_shape, const Tensor& dy);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_POOLING_H_
