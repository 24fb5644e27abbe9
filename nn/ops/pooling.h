// Average pooling (kernel x kernel windows, no padding) and global average
// pooling over each channel's plane.
#ifndef RINGLET_NN_OPS_POOLING_H_
#define RINGLET_NN_OPS_POOLING_H_

#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// x [N, C, H, W] -> [N, C, (H - k) / stride + 1, (W - k) / stride + 1].
Tensor AvgPool2dForward(const Tensor& x, int kernel, int stride);
Tensor AvgPool2dBackward(const Shape& x_shape, const Tensor& dy, int kernel,
                         int stride);

// x [N, C, H, W] -> [N, C].
Tensor GlobalAvgPoolForward(const Tensor& x);
Tensor GlobalAvgPoolBackward(const Shape& x_shape, const Tensor& dy);

// Implementations per device type (kernel_table.h), given checked shapes
// (y_shape: the pooled one): average pooling in float32 or bfloat16, the
// output in the input's type; global pooling in float32.
namespace kernels {
inline KernelTable<Tensor(const Tensor& x, const Shape& y_shape, int kernel,
                          int stride)>
    avg_pool2d_forward{"avgpool2d"};
inline KernelTable<Tensor(const Shape& x_shape, const Tensor& dy, int kernel,
                          int stride)>
    avg_pool2d_backward{"avgpool2d backward"};
inline KernelTable<Tensor(const Tensor& x)> global_avg_pool_forward{
    "global_avg_pool"};
inline KernelTable<Tensor(const Shape& x_shape, const Tensor& dy)>
    global_avg_pool_backward{"global_avg_pool backward"};
}  // namespace kernels

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_POOLING_H_
