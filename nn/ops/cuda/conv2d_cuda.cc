// conv2d on GPUs through cuDNN: forward, backward data and backward filter,
// each algorithm chosen once per shape by cuDNN's heuristics and kept, with
// its workspace from the device's caching allocator. FMA math (no TF32) by
// default, so results stay within float32 rounding of the CPU path; TF32
// with SetGpuPrecision(kTf32) (nn/gpu_precision.h).
#include <map>
#include <mutex>
#include <tuple>

#include "nn/cuda/elementwise_kernels.h"
#include "nn/gpu_precision.h"
#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/cuda/cuda_ops.h"

namespace ringlet::nn::cuda_ops {
namespace {

struct FilterDesc {
  explicit FilterDesc(const Tensor& w) {
    RINGLET_CUDNN_CHECK(cudnnCreateFilterDescriptor(&desc));
    RINGLET_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
        desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(w.dim(0)),
        static_cast<int>(w.dim(1)), static_cast<int>(w.dim(2)),
        static_cast<int>(w.dim(3))));
  }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(desc); }
  cudnnFilterDescriptor_t desc = nullptr;
};

struct ConvDesc {
  ConvDesc(int padding, int stride) {
    RINGLET_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&desc));
    RINGLET_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        desc, padding, padding, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION,
        CUDNN_DATA_FLOAT));
    RINGLET_CUDNN_CHECK(cudnnSetConvolutionMathType(
        desc, gpu_precision() == GpuPrecision::kTf32 ? CUDNN_DEFAULT_MATH
                                                     : CUDNN_FMA_MATH));
  }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(desc); }
  cudnnConvolutionDescriptor_t desc = nullptr;
};

// Everything cuDNN needs for one convolution shape.
struct Problem {
  Problem(const Tensor& x, const Tensor& w, const Conv2dParams& params,
          int64_t p, int64_t q)
      : x_desc(x.dim(0), x.dim(1), x.dim(2), x.dim(3)),
        y_desc(x.dim(0), w.dim(0), p, q),
        w_desc(w),
        conv(params.padding, params.stride) {}
  TensorDesc x_desc, y_desc;
  FilterDesc w_desc;
  ConvDesc conv;
};

using ShapeKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t,
                            int64_t, int64_t, int, int>;

struct Algorithms {
  cudnnConvolutionFwdAlgo_t forward;
  cudnnConvolutionBwdDataAlgo_t backward_data;
  cudnnConvolutionBwdFilterAlgo_t backward_filter;
};

// cuDNN's first working heuristic choice per shape and device, kept.
const Algorithms& ChooseAlgorithms(cudnnHandle_t handle, const Tensor& x,
                                   const Tensor& w, const Conv2dParams& params,
                                   const Problem& problem) {
  static std::mutex mu;
  static std::map<ShapeKey, Algorithms> chosen;
  const ShapeKey key{x.device().index, x.dim(0),      x.dim(1), x.dim(2),
                     x.dim(3),         w.dim(0),      w.dim(2), w.dim(3),
                     params.stride,    params.padding};
  std::lock_guard<std::mutex> lock(mu);
  const auto it = chosen.find(key);
  if (it != chosen.end()) return it->second;
  Algorithms a;
  int found = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  RINGLET_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
      handle, problem.x_desc.get(), problem.w_desc.desc, problem.conv.desc,
      problem.y_desc.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, fwd));
  a.forward = fwd[0].algo;
  for (int i = found - 1; i >= 0; --i) {
    if (fwd[i].status == CUDNN_STATUS_SUCCESS) a.forward = fwd[i].algo;
  }
  cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  RINGLET_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
      handle, problem.w_desc.desc, problem.y_desc.get(), problem.conv.desc,
      problem.x_desc.get(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found,
      data));
  a.backward_data = data[0].algo;
  for (int i = found - 1; i >= 0; --i) {
    if (data[i].status == CUDNN_STATUS_SUCCESS) a.backward_data = data[i].algo;
  }
  cudnnConvolutionBwdFilterAlgoPerf_t
      filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  RINGLET_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      handle, problem.x_desc.get(), problem.y_desc.get(), problem.conv.desc,
      problem.w_desc.desc, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &found,
      filter));
  a.backward_filter = filter[0].algo;
  for (int i = found - 1; i >= 0; --i) {
    if (filter[i].status == CUDNN_STATUS_SUCCESS) {
      a.backward_filter = filter[i].algo;
    }
  }
  return chosen.emplace(key, a).first->second;
}

int64_t OutputSize(int64_t in, int64_t kernel, const Conv2dParams& params) {
  return (in + 2 * params.padding - kernel) / params.stride + 1;
}

}  // namespace

Tensor Conv2dForward(const Tensor& x, const Tensor& w, const Tensor& b,
                     const Conv2dParams& params) {
  OnDevice on(x);
  const int64_t p = OutputSize(x.dim(2), w.dim(2), params);
  const int64_t q = OutputSize(x.dim(3), w.dim(3), params);
  Tensor y = Tensor::Uninitialized({x.dim(0), w.dim(0), p, q}, x.device());
  if (y.numel() == 0) return y;
  const Problem problem(x, w, params, p, q);
  cudnnHandle_t handle = on.context.cudnn();
  const Algorithms& algo = ChooseAlgorithms(handle, x, w, params, problem);
  size_t bytes = 0;
  RINGLET_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
      handle, problem.x_desc.get(), problem.w_desc.desc, problem.conv.desc,
      problem.y_desc.get(), algo.forward, &bytes));
  Scratch workspace(on.context, bytes);
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnConvolutionForward(
      handle, &one, problem.x_desc.get(), x.device_data(), problem.w_desc.desc,
      w.device_data(), problem.conv.desc, algo.forward, workspace.data(), bytes,
      &zero, problem.y_desc.get(), y.device_data()));
  if (b.defined()) {
    cuda::bias_add_forward(y.device_data(), b.device_data(), y.dim(0), y.dim(1),
                           p * q, on.stream());
  }
  return y;
}

Conv2dGrads Conv2dBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy, const Conv2dParams& params,
                           bool need_dx) {
  OnDevice on(x);
  Conv2dGrads g;
  g.dw = Tensor(w.shape(), w.device());
  if (has_bias) g.db = Tensor({w.dim(0)}, w.device());
  if (need_dx) g.dx = Tensor(x.shape(), x.device());
  if (dy.numel() == 0) return g;
  const Problem problem(x, w, params, dy.dim(2), dy.dim(3));
  cudnnHandle_t handle = on.context.cudnn();
  const Algorithms& algo = ChooseAlgorithms(handle, x, w, params, problem);
  const float one = 1.0f, zero = 0.0f;
  size_t bytes = 0;
  RINGLET_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
      handle, problem.x_desc.get(), problem.y_desc.get(), problem.conv.desc,
      problem.w_desc.desc, algo.backward_filter, &bytes));
  {
    Scratch workspace(on.context, bytes);
    RINGLET_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        handle, &one, problem.x_desc.get(), x.device_data(),
        problem.y_desc.get(), dy.device_data(), problem.conv.desc,
        algo.backward_filter, workspace.data(), bytes, &zero,
        problem.w_desc.desc, g.dw.device_data()));
  }
  if (need_dx) {
    RINGLET_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        handle, problem.w_desc.desc, problem.y_desc.get(), problem.conv.desc,
        problem.x_desc.get(), algo.backward_data, &bytes));
    Scratch workspace(on.context, bytes);
    RINGLET_CUDNN_CHECK(cudnnConvolutionBackwardData(
        handle, &one, problem.w_desc.desc, w.device_data(),
        problem.y_desc.get(), dy.device_data(), problem.conv.desc,
        algo.backward_data, workspace.data(), bytes, &zero,
        problem.x_desc.get(), g.dx.device_data()));
  }
  if (has_bias) {
    const TensorDesc bias_desc(1, w.dim(0), 1, 1);
    RINGLET_CUDNN_CHECK(cudnnConvolutionBackwardBias(
        handle, &one, problem.y_desc.get(), dy.device_data(), &zero,
        bias_desc.get(), g.db.device_data()));
  }
  return g;
}

}  // namespace ringlet::nn::cuda_ops
