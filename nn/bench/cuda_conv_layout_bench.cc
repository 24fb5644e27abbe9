// The measurement item 3 of the bf16 work asks for before any layout
// changes on GPUs: ResNet-18's convolutions (the d2l model on 28 x 28
// images) through cuDNN with the activations and weights in NCHW, as
// ringlet keeps them, against NHWC, in fp32, TF32 and bf16. Each direction
// (forward, backward data, backward filter) of each shape takes the
// fastest usable algorithm of cudnnFind*Ex under the same rules as
// nn/ops/cuda/conv2d.cc (no tensor cores in fp32), then is timed over --reps
// runs. One JSON line per precision and layout: the milliseconds of one step's
// convolutions (each shape times its count in the model). No transposes
// are counted: a model in NHWC would keep every activation so.
//
//   ./bazelw run //nn/bench:cuda_conv_layout_bench -- [--batch_size=256]
#include <cuda_runtime.h>
#include <cudnn.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "gpu/device_probe.h"
#include "nn/cuda/cuda_check.h"

namespace ringlet::nn {
namespace {

struct ConvShape {
  int c, hw, k, r, stride, pad, count;  // Input channels, size, filters...
};

// d2l's ResNet-18 for Fashion-MNIST: the stem, then four stages of two
// residual units (the first unit of stages 2-4 halves the size and has a
// 1x1 shortcut).
const ConvShape kResNet18[] = {
    {1, 28, 64, 3, 1, 1, 1},   {64, 28, 64, 3, 1, 1, 4},
    {64, 28, 128, 3, 2, 1, 1}, {128, 14, 128, 3, 1, 1, 3},
    {64, 28, 128, 1, 2, 0, 1}, {128, 14, 256, 3, 2, 1, 1},
    {256, 7, 256, 3, 1, 1, 3}, {128, 14, 256, 1, 2, 0, 1},
    {256, 7, 512, 3, 2, 1, 1}, {512, 4, 512, 3, 1, 1, 3},
    {256, 7, 512, 1, 2, 0, 1},
};

enum class Precision { kFp32, kTf32, kBf16 };

// Device memory holding random values of the precision's type.
class DeviceBuffer {
 public:
  DeviceBuffer(int64_t count, bool bf16, std::mt19937& rng)
      : bytes_(count * (bf16 ? 2 : 4)) {
    std::vector<float> values(count);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (float& v : values) v = uniform(rng);
    std::vector<uint16_t> halves;
    const void* host = values.data();
    if (bf16) {  // The upper 16 bits (random values need no rounding).
      halves.resize(count);
      for (int64_t i = 0; i < count; ++i) {
        uint32_t bits;
        std::memcpy(&bits, &values[i], 4);
        halves[i] = static_cast<uint16_t>(bits >> 16);
      }
      host = halves.data();
    }
    RINGLET_CUDA_CHECK(cudaMalloc(&data_, bytes_));
    RINGLET_CUDA_CHECK(cudaMemcpy(data_, host, bytes_, cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return data_; }

 private:
  size_t bytes_;
  void* data_ = nullptr;
};

// The descriptors of one shape in one layout and precision.
struct Problem {
  Problem(const ConvShape& s, int64_t n, bool nhwc, Precision precision) {
    const cudnnTensorFormat_t format =
        nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const cudnnDataType_t type =
        precision == Precision::kBf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    const int out = (s.hw + 2 * s.pad - s.r) / s.stride + 1;
    RINGLET_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    RINGLET_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    RINGLET_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    RINGLET_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    RINGLET_CUDNN_CHECK(cudnnSetTensor4dDescriptor(
        x, format, type, static_cast<int>(n), s.c, s.hw, s.hw));
    RINGLET_CUDNN_CHECK(cudnnSetTensor4dDescriptor(
        y, format, type, static_cast<int>(n), s.k, out, out));
    RINGLET_CUDNN_CHECK(
        cudnnSetFilter4dDescriptor(w, type, format, s.k, s.c, s.r, s.r));
    RINGLET_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        conv, s.pad, s.pad, s.stride, s.stride, 1, 1, CUDNN_CROSS_CORRELATION,
        CUDNN_DATA_FLOAT));
    RINGLET_CUDNN_CHECK(cudnnSetConvolutionMathType(
        conv,
        precision == Precision::kFp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
    x_count = n * s.c * s.hw * s.hw;
    y_count = n * s.k * out * out;
    w_count = int64_t{s.k} * s.c * s.r * s.r;
  }
  ~Problem() {
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
  }
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int64_t x_count = 0, y_count = 0, w_count = 0;
};

// The first of cuDNN's list (fastest first) that ran, without tensor
// cores in fp32; -1 when none.
template <typename Perf>
int FirstUsable(const Perf* results, int found, Precision precision) {
  for (int i = 0; i < found; ++i) {
    if (results[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (precision == Precision::kFp32 &&
        results[i].mathType != CUDNN_FMA_MATH &&
        results[i].mathType != CUDNN_DEFAULT_MATH) {
      continue;
    }
    return i;
  }
  return -1;
}

// The math an algorithm runs with: FMA in fp32 (cuDNN's default math may
// take TF32 on Ampere and later), else the one it was timed with.
cudnnMathType_t Math(cudnnMathType_t measured, Precision precision) {
  return precision == Precision::kFp32 ? CUDNN_FMA_MATH : measured;
}

// Milliseconds of one run of `run`, the mean over `reps` after one warm run.
template <typename Run>
double TimeMs(const Run& run, int reps) {
  run();
  cudaEvent_t start, stop;
  RINGLET_CUDA_CHECK(cudaEventCreate(&start));
  RINGLET_CUDA_CHECK(cudaEventCreate(&stop));
  RINGLET_CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < reps; ++i) run();
  RINGLET_CUDA_CHECK(cudaEventRecord(stop));
  RINGLET_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  RINGLET_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / reps;
}

// Forward + backward data + backward filter of one shape, in ms; -1 when
// some direction has no usable algorithm in this layout and precision.
double ShapeMs(cudnnHandle_t handle, const ConvShape& s, int64_t n, bool nhwc,
               Precision precision, void* workspace, size_t workspace_bytes,
               int reps, std::mt19937& rng) {
  const Problem p(s, n, nhwc, precision);
  const bool bf16 = precision == Precision::kBf16;
  DeviceBuffer x(p.x_count, bf16, rng), w(p.w_count, bf16, rng),
      y(p.y_count, bf16, rng);
  const float one = 1.0f, zero = 0.0f;
  double total = 0;
  int found = 0;

  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  RINGLET_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
      handle, p.x, x.get(), p.w, w.get(), p.conv, p.y, y.get(),
      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, fwd, workspace,
      workspace_bytes));
  int i = FirstUsable(fwd, found, precision);
  if (i < 0) return -1;
  RINGLET_CUDNN_CHECK(
      cudnnSetConvolutionMathType(p.conv, Math(fwd[i].mathType, precision)));
  total += TimeMs(
      [&] {
        RINGLET_CUDNN_CHECK(cudnnConvolutionForward(
            handle, &one, p.x, x.get(), p.w, w.get(), p.conv, fwd[i].algo,
            workspace, fwd[i].memory, &zero, p.y, y.get()));
      },
      reps);

  cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  RINGLET_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
      handle, p.w, w.get(), p.y, y.get(), p.conv, p.x, x.get(),
      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, data, workspace,
      workspace_bytes));
  i = FirstUsable(data, found, precision);
  if (i < 0) return -1;
  RINGLET_CUDNN_CHECK(
      cudnnSetConvolutionMathType(p.conv, Math(data[i].mathType, precision)));
  total += TimeMs(
      [&] {
        RINGLET_CUDNN_CHECK(cudnnConvolutionBackwardData(
            handle, &one, p.w, w.get(), p.y, y.get(), p.conv, data[i].algo,
            workspace, data[i].memory, &zero, p.x, x.get()));
      },
      reps);

  cudnnConvolutionBwdFilterAlgoPerf_t
      filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  RINGLET_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
      handle, p.x, x.get(), p.y, y.get(), p.conv, p.w, w.get(),
      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &found, filter, workspace,
      workspace_bytes));
  i = FirstUsable(filter, found, precision);
  if (i < 0) return -1;
  RINGLET_CUDNN_CHECK(
      cudnnSetConvolutionMathType(p.conv, Math(filter[i].mathType, precision)));
  total += TimeMs(
      [&] {
        RINGLET_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
            handle, &one, p.x, x.get(), p.y, y.get(), p.conv, filter[i].algo,
            workspace, filter[i].memory, &zero, p.w, w.get()));
      },
      reps);
  return total;
}

int Main(int argc, char** argv) {
  CLI::App app(
      "ResNet-18's convolutions through cuDNN in NCHW against NHWC, in fp32, "
      "TF32 and bf16: one JSON line per precision and layout");
  cli::UseConventions(app);
  int64_t batch_size = 256;
  int reps = 10;
  app.add_option("--batch_size", batch_size, "images per step")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  app.add_option("--reps", reps, "timed runs of each direction")
      ->check(CLI::Range(1, 1000));
  RINGLET_PARSE_FLAGS(app, argc, argv);

  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) {
    std::fprintf(stderr, "cuda_conv_layout_bench: needs a GPU; %s\n",
                 report.reason.c_str());
    return 1;
  }
  RINGLET_CUDA_CHECK(cudaSetDevice(report.usable[0]));
  cudnnHandle_t handle;
  RINGLET_CUDNN_CHECK(cudnnCreate(&handle));
  // Candidates needing more workspace than this are not tried (as
  // nn/ops/cuda/conv2d.cc's search).
  size_t workspace_bytes = size_t{1} << 30;
  void* workspace = nullptr;
  RINGLET_CUDA_CHECK(cudaMalloc(&workspace, workspace_bytes));
  std::mt19937 rng(1);
  const struct {
    Precision precision;
    const char* name;
  } kPrecisions[] = {{Precision::kFp32, "fp32"},
                     {Precision::kTf32, "tf32"},
                     {Precision::kBf16, "bf16"}};
  for (const auto& prec : kPrecisions) {
    double ms[2] = {0, 0};
    for (int nhwc = 0; nhwc < 2; ++nhwc) {
      for (const ConvShape& s : kResNet18) {
        const double one =
            ShapeMs(handle, s, batch_size, nhwc == 1, prec.precision, workspace,
                    workspace_bytes, reps, rng);
        if (one < 0 || ms[nhwc] < 0) {
          ms[nhwc] = -1;  // Some shape has no usable algorithm.
          continue;
        }
        ms[nhwc] += one * s.count;
      }
      std::printf(
          "{\"model\": \"resnet18\", \"batch_size\": %lld, \"precision\": "
          "\"%s\", \"layout\": \"%s\", \"conv_ms\": %s}\n",
          static_cast<long long>(batch_size), prec.name, nhwc ? "nhwc" : "nchw",
          ms[nhwc] < 0 ? "null" : std::to_string(ms[nhwc]).c_str());
      std::fflush(stdout);
    }
  }
  cudaFree(workspace);
  cudnnDestroy(handle);
  return 0;
}

}  // namespace
}  // namespace ringlet::nn

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("cuda_conv_layout_bench",
                               [&] { return ringlet::nn::Main(argc, argv); });
}
