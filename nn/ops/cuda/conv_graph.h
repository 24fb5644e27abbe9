// Convolutions through cuDNN's graph (backend) API, for
// --conv_algorithms=graph. The legacy API (cudnnFind*Ex over the
// CUDNN_CONVOLUTION_*_ALGO_* enums) offers a fixed set of kernels; the
// graph API's engines are the ones PyTorch 2 runs, and on an H100 the
// legacy choices were the largest cost of ResNet-18 at batch 64 (see
// docs/gpu.md). For each shape and cuDNN handle, the heuristics' candidate
// plans are timed once and the fastest is kept, as the legacy path's
// "measure" does. When cuDNN offers no usable plan, or building one fails,
// the caller falls back to the legacy API (and says why once).
#ifndef RINGLET_NN_OPS_CUDA_CONV_GRAPH_H_
#define RINGLET_NN_OPS_CUDA_CONV_GRAPH_H_

#include <cstdint>
#include <string>

#include "nn/ops/conv2d.h"
#include "nn/ops/cuda/cuda_op_support.h"

namespace ringlet::nn::cuda_ops {

enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

// One convolution of x [N, C, H, W] with w [K, C, R, S] giving y [N, K, P,
// Q], in `direction`: forward writes y from x and w, backward-data writes
// x (dx) from y (dy) and w, backward-filter writes w (dw) from x and y
// (dy). All three are of `dtype` (float32, or bfloat16 summed in float32
// on tensor cores) and stored in `format` (channels-last: w as [K, R, S,
// C]). The output is written whole (beta 0). Returns false, having run
// nothing, when the graph API cannot do it here (the caller uses the
// legacy API); throws DeviceError when a chosen plan fails to run.
bool RunGraphConvolution(ConvDirection direction, OnDevice& on, DType dtype,
                         MemoryFormat format, const int64_t x_dims[4],
                         const int64_t w_dims[4], const int64_t y_dims[4],
                         const Conv2dParams& params, void* x, void* w, void* y);

// How many convolutions ran through the graph API so far (tests check
// that the path was taken, not silently the fallback), and the last
// reason one fell back ("" if none did).
uint64_t GraphConvolutionsRun();
std::string LastGraphFallback();

}  // namespace ringlet::nn::cuda_ops

#endif  // RINGLET_NN_OPS_CUDA_CONV_GRAPH_H_
