// Elementwise ops on CUDA devices: add (and a batch norm's add-ReLU
// epilogue) written once for float32 and bfloat16, each value in float32
// rounded once, as the CPU's; the float32 updates of gradients (scaled
// add, divide, scale), their sum of squares and zeroing.
#include <vector>

#include "nn/cuda/block_sum.cuh"
#include "nn/cuda/float_types.cuh"
#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/cuda/tensor_lists.cuh"
#include "nn/ops/elementwise.h"

namespace ringlet::nn::cuda_ops {
namespace {

template <typename T>
__global__ void AddKernel(const T* a, const T* b, T* out, int64_t n) {
  RINGLET_FOR_EACH_ELEMENT(i, n) {
    out[i] = FromFloat<T>(ToFloat(a[i]) + ToFloat(b[i]));
  }
}

// y += r where r is given (the sum rounded to T, as the separate add),
// then ReLU where asked (its result is its input or +0: no rounding).
template <typename T>
__global__ void AddReluInPlaceKernel(T* y, const T* r, bool relu, int64_t n) {
  RINGLET_FOR_EACH_ELEMENT(i, n) {
    float v = ToFloat(y[i]);
    if (r != nullptr) v = ToFloat(FromFloat<T>(v + ToFloat(r[i])));
    if (relu) v = v > 0.0f ? v : 0.0f;
    y[i] = FromFloat<T>(v);
  }
}

__global__ void AddScaledKernel(float* a, const float* b, float scale,
                                int64_t n) {
  RINGLET_FOR_EACH_ELEMENT(i, n) { a[i] += scale * b[i]; }
}

__global__ void DivideKernel(float* x, int64_t n, float divisor) {
  RINGLET_FOR_EACH_ELEMENT(i, n) { x[i] /= divisor; }
}

__global__ void ScaleKernel(float* x, int64_t n, float factor) {
  RINGLET_FOR_EACH_ELEMENT(i, n) { x[i] *= factor; }
}

// Partial sums per tensor: a fixed grid and reduction tree, so the same
// bits every run; the host adds the partials in order.
constexpr int kSumOfSquaresBlocks = 64;

__global__ void SumOfSquaresPartialsKernel(const float* x, int64_t n,
                                           double* partials) {
  __shared__ double shared[kElementwiseThreads];
  double mine = 0;
  RINGLET_FOR_EACH_ELEMENT(i, n) {
    const double v = x[i];
    mine += v * v;
  }
  const double total = cuda::BlockSum<kElementwiseThreads>(mine, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void FillEachKernel(TensorList list, float value) {
  float* out = list.data[blockIdx.y];
  const int64_t n = list.size[blockIdx.y];
  RINGLET_FOR_EACH_ELEMENT(i, n) { out[i] = value; }
}

// out = a + b in a's type (the front makes b's type a's).
void LaunchAdd(const Tensor& a, const Tensor& b, Tensor& out,
               cudaStream_t stream) {
  const int64_t n = a.numel();
  if (n == 0) return;
  WithElementType(a.dtype(), [&](auto t) {
    using T = decltype(t);
    AddKernel<T><<<ElementwiseBlocks(n), kElementwiseThreads, 0, stream>>>(
        static_cast<const T*>(a.raw_data()),
        static_cast<const T*>(b.raw_data()), static_cast<T*>(out.raw_data()),
        n);
  });
  RINGLET_CUDA_CHECK_LAUNCH();
}

Tensor AddCuda(const Tensor& a, const Tensor& b_any) {
  OnDevice on(a);
  Tensor out = OutputLike(a, a.dtype());
  LaunchAdd(a, InFormatOf(b_any, a), out, on.stream());
  return out;
}

void AddInPlaceCuda(Tensor& a, const Tensor& b_any) {
  OnDevice on(a);
  LaunchAdd(a, InFormatOf(b_any, a), a, on.stream());
}

void AddReluInPlaceCuda(Tensor& y, const Tensor& residual_any, bool relu) {
  OnDevice on(y);
  const Tensor residual =
      residual_any.defined() ? InFormatOf(residual_any, y) : Tensor();
  const int64_t n = y.numel();
  if (n == 0) return;
  WithElementType(y.dtype(), [&](auto t) {
    using T = decltype(t);
    AddReluInPlaceKernel<T>
        <<<ElementwiseBlocks(n), kElementwiseThreads, 0, on.stream()>>>(
            static_cast<T*>(y.raw_data()),
            residual.defined() ? static_cast<const T*>(residual.raw_data())
                               : nullptr,
            relu, n);
  });
  RINGLET_CUDA_CHECK_LAUNCH();
}

void AddScaledInPlaceCuda(Tensor& a, const Tensor& b_any, float scale) {
  OnDevice on(a);
  const Tensor b = InFormatOf(b_any, a);
  const int64_t n = a.numel();
  if (n == 0) return;
  AddScaledKernel<<<ElementwiseBlocks(n), kElementwiseThreads, 0,
                    on.stream()>>>(a.device_data(), b.device_data(), scale, n);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void DivideInPlaceCuda(Tensor& x, float divisor) {
  OnDevice on(x);
  const int64_t n = x.numel();
  if (n == 0) return;
  DivideKernel<<<ElementwiseBlocks(n), kElementwiseThreads, 0, on.stream()>>>(
      x.device_data(), n, divisor);
  RINGLET_CUDA_CHECK_LAUNCH();
}

void ScaleInPlaceCuda(Tensor& x, float factor) {
  OnDevice on(x);
  const int64_t n = x.numel();
  if (n == 0) return;
  ScaleKernel<<<ElementwiseBlocks(n), kElementwiseThreads, 0, on.stream()>>>(
      x.device_data(), n, factor);
  RINGLET_CUDA_CHECK_LAUNCH();
}

double SumOfSquaresCuda(const std::vector<const Tensor*>& tensors) {
  OnDevice on(*tensors.front());
  // Every tensor's partial sums into one buffer, one read back, added up
  // on the host in a fixed order.
  const size_t count = tensors.size() * kSumOfSquaresBlocks;
  Scratch partials(on.context, count * sizeof(double));
  double* device = static_cast<double*>(partials.data());
  for (size_t t = 0; t < tensors.size(); ++t) {
    // Launched for empty tensors too: their partials are then zeros.
    SumOfSquaresPartialsKernel<<<kSumOfSquaresBlocks, kElementwiseThreads, 0,
                                 on.stream()>>>(
        tensors[t]->device_data(), tensors[t]->numel(),
        device + t * kSumOfSquaresBlocks);
    RINGLET_CUDA_CHECK_LAUNCH();
  }
  std::vector<double> host(count);
  RINGLET_CUDA_CHECK(cudaMemcpyAsync(host.data(), device,
                                     count * sizeof(double),
                                     cudaMemcpyDeviceToHost, on.stream()));
  on.context.Synchronize();
  double sum = 0;
  for (double v : host) sum += v;
  return sum;
}

void ZeroAllCuda(const std::vector<Tensor*>& tensors) {
  OnDevice on(*tensors.front());
  ForEachList(tensors.size(), [&](size_t first, int count) {
    const TensorList list = ListOf(tensors, first, count);
    FillEachKernel<<<ListGrid(list.size, list.count), kListThreads, 0,
                     on.stream()>>>(list, 0.0f);
    RINGLET_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::add, DeviceType::kCuda, AddCuda);
RINGLET_REGISTER_KERNEL(kernels::add_in_place, DeviceType::kCuda,
                        AddInPlaceCuda);
RINGLET_REGISTER_KERNEL(kernels::add_relu_in_place, DeviceType::kCuda,
                        AddReluInPlaceCuda);
RINGLET_REGISTER_KERNEL(kernels::add_scaled_in_place, DeviceType::kCuda,
                        AddScaledInPlaceCuda);
RINGLET_REGISTER_KERNEL(kernels::divide_in_place, DeviceType::kCuda,
                        DivideInPlaceCuda);
RINGLET_REGISTER_KERNEL(kernels::scale_in_place, DeviceType::kCuda,
                        ScaleInPlaceCuda);
RINGLET_REGISTER_KERNEL(kernels::sum_of_squares, DeviceType::kCuda,
                        SumOfSquaresCuda);
RINGLET_REGISTER_KERNEL(kernels::zero_all, DeviceType::kCuda, ZeroAllCuda);

}  // namespace ringlet::nn::cuda_ops
