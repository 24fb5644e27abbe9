// Max pooling (PyTorch's nn.MaxPool2d without dilation or ceil mode):
// kernel x kernel windows at `stride`, the input padded by `padding` on
// every side with values that never win. A NaN in a window is its maximum
// (PyTorch's rule). The gradient goes to each window's first maximum, in
// row-major order. float32, and bfloat16 through float32 (exact: a maximum
// is one of its inputs); outputs in the input's type.
#ifndef RINGLET_NN_OPS_MAX_POOL_H_
#define RINGLET_NN_OPS_MAX_POOL_H_

#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

struct MaxPool2dParams {
  int kernel = 2;
  int stride = 2;
  int padding = 0;
};

// Throws ShapeError for a kernel or stride below 1 or a padding outside
// [0, kernel / 2] (PyTorch's limit: every window holds an input).
void CheckMaxPool2dParams(const MaxPool2dParams& params);

// [N, C, H, W] -> [N, C, (H + 2 padding - kernel) / stride + 1, same for W].
// Throws ShapeError for another rank, parameters CheckMaxPool2dParams
// refuses, or a window larger than the padded input.
Shape MaxPool2dOutputShape(const Shape& x, const MaxPool2dParams& params);

Tensor MaxPool2dForward(const Tensor& x, const MaxPool2dParams& params);
// `x` and `y` are the forward's input and output; dy of y's shape.
Tensor MaxPool2dBackward(const Tensor& x, const Tensor& y, const Tensor& dy,
                         const MaxPool2dParams& params);

// Implementations per device type (kernel_table.h), float32, given checked
// shapes (y_shape: the pooled one).
namespace kernels {
inline KernelTable<Tensor(const Tensor& x, const Shape& y_shape,
                          const MaxPool2dParams& params)>
    max_pool2d_forward{"maxpool2d"};
inline KernelTable<Tensor(const Tensor& x, const Tensor& y, const Tensor& dy,
                          const MaxPool2dParams& params)>
    max_pool2d_backward{"maxpool2d backward"};
}  // namespace kernels

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_MAX_POOL_H_
