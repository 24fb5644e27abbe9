// conv2d on GPUs through cuDNN: forward, backward data and backward filter,
// each algorithm chosen once per shape and device and kept: by default the
// fastest of cuDNN's candidates, timed on the first call (cudnnFind*Ex, as
// PyTorch's cudnn.benchmark), else cuDNN's heuristics, or their first
// deterministic one (ComputeOptions::conv_algorithms, nn/gpu_precision.h,
// the calling thread's; the choices are kept per setting). Workspaces
// come from the device's caching allocator. FMA math (no TF32) by
// default, so results stay within float32 rounding of the CPU path; TF32
// under ComputeOptions::gpu_precision kTf32. bfloat16 operands
// (autocast, nn/ops/autocast.h) run cuDNN's bfloat16 configuration: float32
// sums on tensor cores, bfloat16 outputs; the weight gradient is written
// in bfloat16 (the legacy API's configuration) and widened to float32.
//
// Memory formats: a channels-last input (or any input once the process
// asks for channels-last activations, nn/memory_format.h) runs in NHWC with
// the filter as [K, R, S, C] (transposed here unless given so, as
// Conv2dComputeWeight makes it once per step), and the output and input
// gradient are channels-last.
#include "nn/ops/conv2d.h"

#include <map>
#include <mutex>
#include <tuple>

#include "nn/gpu_precision.h"
#include "nn/memory_format.h"
#include "nn/ops/activation.h"
#include "nn/ops/autocast.h"
#include "nn/ops/cuda/channel_kernels.h"
#include "nn/ops/cuda/conv_graph.h"
#include "nn/ops/cuda/cuda_op_support.h"

namespace ringlet::nn::cuda_ops {
namespace {
namespace {

// w [K, C, R, S] in its memory format.
struct FilterDesc {
  explicit FilterDesc(const Tensor& w) {
    RINGLET_CUDNN_CHECK(cudnnCreateFilterDescriptor(&desc));
    RINGLET_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
        desc, CudnnType(w.dtype()), CudnnFormat(w.memory_format()),
        static_cast<int>(w.dim(0)), static_cast<int>(w.dim(1)),
        static_cast<int>(w.dim(2)), static_cast<int>(w.dim(3))));
  }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(desc); }
  cudnnFilterDescriptor_t desc = nullptr;
};

// Whether a convolution may run on tensor cores: bfloat16 data, or float32
// under --precision=tf32.
bool TensorOps(DType dtype) {
  return dtype == DType::kBFloat16 || gpu_precision() == GpuPrecision::kTf32;
}

struct ConvDesc {
  ConvDesc(int padding, int stride, DType dtype) {
    RINGLET_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&desc));
    RINGLET_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        desc, padding, padding, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION,
        CUDNN_DATA_FLOAT));
    // The legacy API runs tensor cores (TF32 on fp32 data, sm_80 and
    // later) only when the descriptor asks for CUDNN_TENSOR_OP_MATH; with
    // CUDNN_DEFAULT_MATH the second sitting's TF32 choices were all fp32
    // kernels. (ALLOW_CONVERSION would go down to fp16: not TF32.)
    RINGLET_CUDNN_CHECK(cudnnSetConvolutionMathType(
        desc, TensorOps(dtype) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(desc); }
  cudnnConvolutionDescriptor_t desc = nullptr;
};

// Everything cuDNN needs for one convolution shape (x and w in one memory
// format, y in it too).
struct Problem {
  Problem(const Tensor& x, const Tensor& w, const Conv2dParams& params,
          int64_t p, int64_t q)
      : x_desc(x),
        y_desc(x.dim(0), w.dim(0), p, q, x.dtype(), x.memory_format()),
        w_desc(w),
        conv(params.padding, params.stride, x.dtype()) {}
  TensorDesc x_desc, y_desc;
  FilterDesc w_desc;
  ConvDesc conv;
};

// A convolution shape on a device, with the settings its choice was made
// under (each process sets them once; tests switch them).
using ShapeKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t,
                            int64_t, int64_t, int, int, int, int, int, int>;

ShapeKey KeyOf(const Tensor& x, const Tensor& w, const Conv2dParams& params) {
  return ShapeKey{x.device().index,
                  x.dim(0),
                  x.dim(1),
                  x.dim(2),
                  x.dim(3),
                  w.dim(0),
                  w.dim(2),
                  w.dim(3),
                  params.stride,
                  params.padding,
                  static_cast<int>(gpu_precision()),
                  static_cast<int>(conv_algorithms()),
                  static_cast<int>(x.dtype()),
                  static_cast<int>(x.memory_format())};
}

// One direction's algorithm for one shape, the math type to run it with,
// and the workspace it needs.
template <typename Algo>
struct Choice {
  Algo algo;
  cudnnMathType_t math;
  size_t workspace;
};

// The most workspace a candidate may use in a search (candidates needing
// more are not tried).
constexpr size_t kMaxFindWorkspace = size_t{1} << 30;

// The largest workspace any algorithm of a direction needs for the problem,
// with tensor cores or without (a search times both where the descriptor
// allows them), at most kMaxFindWorkspace: what the search is offered, so
// its memory peak is what the shape needs, not a fixed gigabyte. `query`
// is the direction's cudnnGet*WorkspaceSize for one algorithm.
template <typename Query>
size_t LargestWorkspace(cudnnConvolutionDescriptor_t conv, int algorithms,
                        bool tensor_ops, const Query& query) {
  size_t largest = 0;
  for (const cudnnMathType_t math : {CUDNN_FMA_MATH, CUDNN_TENSOR_OP_MATH}) {
    if (math == CUDNN_TENSOR_OP_MATH && !tensor_ops) continue;
    RINGLET_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, math));
    for (int algo = 0; algo < algorithms; ++algo) {
      size_t bytes = 0;
      // An algorithm that cannot run the problem says so: not a candidate.
      if (query(algo, &bytes) == CUDNN_STATUS_SUCCESS) {
        largest = std::max(largest, bytes);
      }
    }
  }
  RINGLET_CUDNN_CHECK(cudnnSetConvolutionMathType(
      conv, tensor_ops ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  return std::min(largest, kMaxFindWorkspace);
}

// Device memory offered to cudnnFind*Ex as workspace. Straight from
// cudaMalloc (freed, synchronously, once the search is over: the caching
// allocator would keep a block this size for good); halved until it fits.
class FindWorkspace {
 public:
  FindWorkspace(int device, size_t wanted) {
    if (wanted == 0) return;
    gpu::DeviceGuard guard(device);
    for (bytes_ = wanted; bytes_ > 0;
         bytes_ = bytes_ > (size_t{1} << 20) ? bytes_ / 2 : 0) {
      if (cudaMalloc(&data_, bytes_) == cudaSuccess) return;
      cudaGetLastError();  // Out of memory: try a smaller one.
      data_ = nullptr;
    }
  }
  ~FindWorkspace() {
    if (data_ != nullptr) cudaFree(data_);
  }
  FindWorkspace(const FindWorkspace&) = delete;
  FindWorkspace& operator=(const FindWorkspace&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// The first usable result of cuDNN's list (sorted fastest or most likely
// first): it ran, is deterministic when that was asked for, and on float32
// data in fp32 does not use tensor cores (TF32). -1 when none is.
template <typename Perf>
int FirstUsable(const Perf* results, int found, bool bf16) {
  const bool deterministic =
      conv_algorithms() == ConvAlgorithms::kDeterministic;
  const bool fp32 = !bf16 && gpu_precision() == GpuPrecision::kFp32;
  for (int i = 0; i < found; ++i) {
    const Perf& r = results[i];
    if (r.status != CUDNN_STATUS_SUCCESS) continue;
    if (deterministic && r.determinism != CUDNN_DETERMINISTIC) continue;
    if (fp32 && (r.mathType == CUDNN_TENSOR_OP_MATH ||
                 r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) {
      continue;
    }
    return i;
  }
  return -1;
}

// The math type a chosen algorithm runs with: on float32 data in fp32
// always FMA (cuDNN's default math may use TF32 on Ampere and later).
cudnnMathType_t ExecutionMath(cudnnMathType_t measured, bool bf16) {
  return !bf16 && gpu_precision() == GpuPrecision::kFp32 ? CUDNN_FMA_MATH
                                                         : measured;
}

// The usable choice for input x's shape, type and format; else a
// DeviceError naming them and the settings to try instead.
template <typename Perf, typename Algo>
Choice<Algo> ChoiceFrom(const Perf* results, int found, const char* what,
                        const Tensor& x) {
  const bool bf16 = x.dtype() == DType::kBFloat16;
  const int i = FirstUsable(results, found, bf16);
  if (i < 0) {
    const bool nhwc = x.memory_format() == MemoryFormat::kChannelsLast;
    throw DeviceError(std::string("conv2d: cuDNN offers no usable ") + what +
                      " algorithm for input " + ToString(x.shape()) + " (" +
                      (bf16 ? "bf16" : Name(gpu_precision())) + ", " +
                      LayoutName(x.memory_format()) +
                      ") under --conv_algorithms=" + Name(conv_algorithms()) +
                      "; try --conv_algorithms=heuristic" +
                      (nhwc ? " or --layout=nchw" : ""));
  }
  return Choice<Algo>{results[i].algo, ExecutionMath(results[i].mathType, bf16),
                      results[i].memory};
}

// Choices kept per shape, one map per direction; the lock is held while a
// choice is made, so two replicas on a GPU do not time candidates at once.
template <typename Algo>
class ChoiceCache {
 public:
  template <typename Make>
  Choice<Algo> Get(const ShapeKey& key, const Make& make) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = chosen_.find(key);
    if (it != chosen_.end()) return it->second;
    return chosen_.emplace(key, make()).first->second;
  }

 private:
  std::mutex mu_;
  std::map<ShapeKey, Choice<Algo>> chosen_;
};

// Deterministic choices come from cuDNN's heuristics, never from timing:
// a timed choice can differ from run to run, and two deterministic
// algorithms still give different bits (PyTorch's cudnn.deterministic
// with benchmark off does the same).
bool Measure() {
  return conv_algorithms() == ConvAlgorithms::kMeasure ||
         conv_algorithms() == ConvAlgorithms::kGraph;
}

Choice<cudnnConvolutionFwdAlgo_t> ForwardChoice(OnDevice& on, const Tensor& x,
                                                const Tensor& w, Tensor& y,
                                                const Conv2dParams& params,
                                                const Problem& problem) {
  static ChoiceCache<cudnnConvolutionFwdAlgo_t> cache;
  // The direction's workspace for an algorithm (by number).
  const auto workspace_of = [&](int algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(
        on.context.cudnn(), problem.x_desc.get(), problem.w_desc.desc,
        problem.conv.desc, problem.y_desc.get(),
        static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
  };
  return cache.Get(KeyOf(x, w, params), [&] {
    cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    if (Measure()) {
      const FindWorkspace workspace(
          x.device().index,
          LargestWorkspace(problem.conv.desc, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                           TensorOps(x.dtype()), workspace_of));
      RINGLET_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
          on.context.cudnn(), problem.x_desc.get(), x.raw_data(),
          problem.w_desc.desc, w.raw_data(), problem.conv.desc,
          problem.y_desc.get(), y.raw_data(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
          &found, results, workspace.data(), workspace.bytes()));
    } else {
      RINGLET_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          on.context.cudnn(), problem.x_desc.get(), problem.w_desc.desc,
          problem.conv.desc, problem.y_desc.get(),
          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, results));
    }
    auto choice =
        ChoiceFrom<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
            results, found, "forward", x);
    RINGLET_CUDNN_CHECK(
        cudnnSetConvolutionMathType(problem.conv.desc, choice.math));
    RINGLET_CUDNN_CHECK(workspace_of(choice.algo, &choice.workspace));
    return choice;
  });
}

Choice<cudnnConvolutionBwdFilterAlgo_t> FilterChoice(
    OnDevice& on, const Tensor& x, const Tensor& w, const Tensor& dy,
    Tensor& dw, const Conv2dParams& params, const Problem& problem) {
  static ChoiceCache<cudnnConvolutionBwdFilterAlgo_t> cache;
  // The direction's workspace for an algorithm (by number).
  const auto workspace_of = [&](int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        on.context.cudnn(), problem.x_desc.get(), problem.y_desc.get(),
        problem.conv.desc, problem.w_desc.desc,
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  };
  return cache.Get(KeyOf(x, w, params), [&] {
    cudnnConvolutionBwdFilterAlgoPerf_t
        results[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int found = 0;
    if (Measure()) {
      const FindWorkspace workspace(
          x.device().index,
          LargestWorkspace(problem.conv.desc,
                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                           TensorOps(x.dtype()), workspace_of));
      RINGLET_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          on.context.cudnn(), problem.x_desc.get(), x.raw_data(),
          problem.y_desc.get(), dy.raw_data(), problem.conv.desc,
          problem.w_desc.desc, dw.raw_data(),
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &found, results,
          workspace.data(), workspace.bytes()));
    } else {
      RINGLET_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          on.context.cudnn(), problem.x_desc.get(), problem.y_desc.get(),
          problem.conv.desc, problem.w_desc.desc,
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &found, results));
    }
    auto choice = ChoiceFrom<cudnnConvolutionBwdFilterAlgoPerf_t,
                             cudnnConvolutionBwdFilterAlgo_t>(
        results, found, "backward-filter", x);
    RINGLET_CUDNN_CHECK(
        cudnnSetConvolutionMathType(problem.conv.desc, choice.math));
    RINGLET_CUDNN_CHECK(workspace_of(choice.algo, &choice.workspace));
    return choice;
  });
}

Choice<cudnnConvolutionBwdDataAlgo_t> DataChoice(OnDevice& on, const Tensor& x,
                                                 const Tensor& w,
                                                 const Tensor& dy, Tensor& dx,
                                                 const Conv2dParams& params,
                                                 const Problem& problem) {
  static ChoiceCache<cudnnConvolutionBwdDataAlgo_t> cache;
  // The direction's workspace for an algorithm (by number).
  const auto workspace_of = [&](int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(
        on.context.cudnn(), problem.w_desc.desc, problem.y_desc.get(),
        problem.conv.desc, problem.x_desc.get(),
        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
  };
  return cache.Get(KeyOf(x, w, params), [&] {
    cudnnConvolutionBwdDataAlgoPerf_t
        results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int found = 0;
    if (Measure()) {
      const FindWorkspace workspace(
          x.device().index,
          LargestWorkspace(problem.conv.desc,
                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                           TensorOps(x.dtype()), workspace_of));
      RINGLET_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
          on.context.cudnn(), problem.w_desc.desc, w.raw_data(),
          problem.y_desc.get(), dy.raw_data(), problem.conv.desc,
          problem.x_desc.get(), dx.raw_data(),
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, results,
          workspace.data(), workspace.bytes()));
    } else {
      RINGLET_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          on.context.cudnn(), problem.w_desc.desc, problem.y_desc.get(),
          problem.conv.desc, problem.x_desc.get(),
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, results));
    }
    auto choice = ChoiceFrom<cudnnConvolutionBwdDataAlgoPerf_t,
                             cudnnConvolutionBwdDataAlgo_t>(results, found,
                                                            "backward-data", x);
    RINGLET_CUDNN_CHECK(
        cudnnSetConvolutionMathType(problem.conv.desc, choice.math));
    RINGLET_CUDNN_CHECK(workspace_of(choice.algo, &choice.workspace));
    return choice;
  });
}

int64_t OutputSize(int64_t in, int64_t kernel, const Conv2dParams& params) {
  return (in + 2 * params.padding - kernel) / params.stride + 1;
}

// --conv_algorithms=graph: the graph API when it has a plan for the shape,
// on the operands' type (float32 or bfloat16; the weight gradient is of
// the weights' type, as the legacy API's).
bool ThroughGraph(ConvDirection direction, OnDevice& on, const Tensor& x,
                  const Tensor& w, const Tensor& y, const Conv2dParams& params,
                  void* x_data, void* w_data, void* y_data) {
  if (conv_algorithms() != ConvAlgorithms::kGraph) return false;
  const int64_t xd[4] = {x.dim(0), x.dim(1), x.dim(2), x.dim(3)};
  const int64_t wd[4] = {w.dim(0), w.dim(1), w.dim(2), w.dim(3)};
  const int64_t yd[4] = {y.dim(0), y.dim(1), y.dim(2), y.dim(3)};
  return RunGraphConvolution(direction, on, x.dtype(), x.memory_format(), xd,
                             wd, yd, params, x_data, w_data, y_data);
}

MemoryFormat FormatFor(const Tensor& x) {
  return GpuConvolutionFormat(x.memory_format());
}

// Adds the bias to y (either format: channels-last is NCHW with one pixel
// per "image", the channels innermost).
void AddBias(Tensor& y, const Tensor& b, cudaStream_t stream) {
  const bool last = y.memory_format() == MemoryFormat::kChannelsLast;
  const int64_t hw = y.dim(2) * y.dim(3);
  const int64_t images = last ? y.dim(0) * hw : y.dim(0);
  const int64_t plane = last ? 1 : hw;
  bias_add(y.raw_data(), y.dtype(), b.device_data(), images, y.dim(1), plane,
           stream);
}

}  // namespace

Tensor Conv2dForwardCuda(const Tensor& x_any, const Tensor& w_any,
                         const Tensor& b, const Conv2dParams& params) {
  OnDevice on(x_any);
  const MemoryFormat format = FormatFor(x_any);
  const Tensor x = x_any.ToMemoryFormat(format);
  const Tensor w = w_any.ToMemoryFormat(format);
  const int64_t p = OutputSize(x.dim(2), w.dim(2), params);
  const int64_t q = OutputSize(x.dim(3), w.dim(3), params);
  Tensor y = Tensor::Uninitialized({x.dim(0), w.dim(0), p, q}, x.device(),
                                   x.dtype(), format);
  if (y.numel() == 0) return y;
  if (!ThroughGraph(ConvDirection::kForward, on, x, w, y, params,
                    const_cast<void*>(x.raw_data()),
                    const_cast<void*>(w.raw_data()), y.raw_data())) {
    const Problem problem(x, w, params, p, q);
    const auto choice = ForwardChoice(on, x, w, y, params, problem);
    RINGLET_CUDNN_CHECK(
        cudnnSetConvolutionMathType(problem.conv.desc, choice.math));
    Scratch workspace(on.context, choice.workspace);
    const float one = 1.0f, zero = 0.0f;
    RINGLET_CUDNN_CHECK(cudnnConvolutionForward(
        on.context.cudnn(), &one, problem.x_desc.get(), x.raw_data(),
        problem.w_desc.desc, w.raw_data(), problem.conv.desc, choice.algo,
        workspace.data(), choice.workspace, &zero, problem.y_desc.get(),
        y.raw_data()));
  }
  if (b.defined()) AddBias(y, b, on.stream());
  return y;
}

Conv2dGrads Conv2dBackwardCuda(const Tensor& x_any, const Tensor& w_any,
                               bool has_bias, const Tensor& dy_any,
                               const Conv2dParams& params, bool need_dx) {
  OnDevice on(x_any);
  Conv2dGrads g;
  if (dy_any.numel() == 0) {  // An empty batch: zero gradients.
    g.dw = Tensor(w_any.shape(), w_any.device());
    if (has_bias) g.db = Tensor({w_any.dim(0)}, w_any.device());
    if (need_dx) {
      g.dx = Tensor(x_any.shape(), x_any.device(), x_any.dtype())
                 .ToMemoryFormat(x_any.memory_format());
    }
    return g;
  }
  // The forward's format; dx goes back in x's own.
  const MemoryFormat format = FormatFor(x_any);
  const Tensor x = x_any.ToMemoryFormat(format);
  const Tensor w = w_any.ToMemoryFormat(format);
  const Tensor dy = dy_any.ToMemoryFormat(format);
  // Written whole below (cuDNN with beta 0, the channel sums): zeroing them
  // first was a kernel each, dx's the size of an activation. The weight
  // gradient is of the weights' type here (the legacy API's bfloat16
  // configuration), widened to float32 at the end.
  Tensor dw = Tensor::Uninitialized(w.shape(), w.device(), w.dtype(), format);
  if (has_bias) g.db = Tensor::Uninitialized({w.dim(0)}, w.device());
  if (need_dx) {
    g.dx = Tensor::Uninitialized(x.shape(), x.device(), x.dtype(), format);
  }
  const Problem problem(x, w, params, dy.dim(2), dy.dim(3));
  cudnnHandle_t handle = on.context.cudnn();
  const float one = 1.0f, zero = 0.0f;
  if (!ThroughGraph(ConvDirection::kBackwardFilter, on, x, w, dy, params,
                    const_cast<void*>(x.raw_data()), dw.raw_data(),
                    const_cast<void*>(dy.raw_data()))) {
    const auto choice = FilterChoice(on, x, w, dy, dw, params, problem);
    RINGLET_CUDNN_CHECK(
        cudnnSetConvolutionMathType(problem.conv.desc, choice.math));
    Scratch workspace(on.context, choice.workspace);
    RINGLET_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        handle, &one, problem.x_desc.get(), x.raw_data(), problem.y_desc.get(),
        dy.raw_data(), problem.conv.desc, choice.algo, workspace.data(),
        choice.workspace, &zero, problem.w_desc.desc, dw.raw_data()));
  }
  // Narrow values move fewer bytes: transposed back, then widened.
  g.dw = dw.ToMemoryFormat(MemoryFormat::kContiguous).To(DType::kFloat32);
  if (need_dx &&
      !ThroughGraph(ConvDirection::kBackwardData, on, x, w, dy, params,
                    g.dx.raw_data(), const_cast<void*>(w.raw_data()),
                    const_cast<void*>(dy.raw_data()))) {
    const auto choice = DataChoice(on, x, w, dy, g.dx, params, problem);
    RINGLET_CUDNN_CHECK(
        cudnnSetConvolutionMathType(problem.conv.desc, choice.math));
    Scratch workspace(on.context, choice.workspace);
    RINGLET_CUDNN_CHECK(cudnnConvolutionBackwardData(
        handle, &one, problem.w_desc.desc, w.raw_data(), problem.y_desc.get(),
        dy.raw_data(), problem.conv.desc, choice.algo, workspace.data(),
        choice.workspace, &zero, problem.x_desc.get(), g.dx.raw_data()));
  }
  if (has_bias) {
    // A reduction of our own: cuDNN's cudnnConvolutionBackwardBias took
    // ~3.3 ms of a 34 ms ResNet-18 step on an H100. It sums
    // float32 (a bfloat16 dy widened first: only LeNet's convolutions have
    // biases that are not folded).
    // Channels-last sums as NCHW with one pixel per image.
    const Tensor dy32 = dy.To(DType::kFloat32);
    const bool last = format == MemoryFormat::kChannelsLast;
    const int64_t plane = dy.dim(2) * dy.dim(3);
    const int64_t n = last ? dy.dim(0) * plane : dy.dim(0), c = dy.dim(1),
                  hw = last ? 1 : plane;
    Scratch partials(on.context, channel_sums_float_scratch_bytes(n, c, hw));
    channel_sums_float(dy32.device_data(), n, c, hw,
                       static_cast<double*>(partials.data()),
                       g.db.device_data(), on.stream());
  }
  if (need_dx) g.dx = g.dx.ToMemoryFormat(x_any.memory_format());
  return g;
}

// bfloat16 through cuDNN's bfloat16 configuration: operands converted, the
// bias rounded (autocast.h).
Tensor ForwardKernel(const Tensor& x, const Tensor& w, const Tensor& b,
                     const Conv2dParams& params, DType compute, bool relu) {
  const Tensor y = compute == DType::kFloat32
                       ? Conv2dForwardCuda(x, w, b, params)
                       : Conv2dForwardCuda(AsDType(x, DType::kBFloat16),
                                           AsDType(w, DType::kBFloat16),
                                           RoundedToBf16(b), params);
  return relu ? ReluForward(y) : y;
}

Conv2dGrads BackwardKernel(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy, const Conv2dParams& params,
                           bool need_dx, DType compute) {
  if (compute == DType::kFloat32) {
    return Conv2dBackwardCuda(x, w, has_bias, dy, params, need_dx);
  }
  return Conv2dBackwardCuda(AsDType(x, DType::kBFloat16),
                            AsDType(w, DType::kBFloat16), has_bias,
                            AsDType(dy, DType::kBFloat16), params, need_dx);
}

// In the compute type, and channels-last where the convolution runs x so.
Tensor ComputeWeightKernel(const Tensor& x, const Tensor& w, DType compute) {
  const Tensor out =
      compute == DType::kBFloat16 ? AsDType(w, DType::kBFloat16) : w;
  return out.ToMemoryFormat(GpuConvolutionFormat(x.memory_format()));
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::conv2d_forward, DeviceType::kCuda,
                        ForwardKernel);
RINGLET_REGISTER_KERNEL(kernels::conv2d_backward, DeviceType::kCuda,
                        BackwardKernel);
RINGLET_REGISTER_KERNEL(kernels::conv2d_compute_weight, DeviceType::kCuda,
                        ComputeWeightKernel);

}  // namespace ringlet::nn::cuda_ops
