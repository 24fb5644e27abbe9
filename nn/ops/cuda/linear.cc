// The fully connected layer on GPUs through cuBLAS. Row-major [N, in] x
// [in, out] is, to column-major cuBLAS, y^T = w^T x^T: each product below
// is written in those column-major terms. Default math (no TF32) unless
// ComputeOptions::gpu_precision is TF32 (the cuBLAS handle's math mode, set
// per call from the calling thread's options, device_context.cc).
// bfloat16 operands (autocast) go through cublasGemmEx with float32 sums:
// bfloat16 outputs, a float32 weight gradient.
#include "nn/ops/linear.h"

#include <cublas_v2.h>

#include "nn/ops/autocast.h"
#include "nn/ops/cuda/channel_kernels.h"
#include "nn/ops/cuda/cuda_op_support.h"

namespace ringlet::nn::cuda_ops {
namespace {
namespace {

// C (m x n, column-major, ldc) = A . B with bfloat16 A and B and float32
// sums, C of `c_type`.
void GemmBf16(cublasHandle_t handle, cublasOperation_t op_a,
              cublasOperation_t op_b, int m, int n, int k, const void* a,
              int lda, const void* b, int ldb, void* c, cudaDataType c_type,
              int ldc) {
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUBLAS_CHECK(cuda::Cublas().gemm_ex(
      handle, op_a, op_b, m, n, k, &one, a, CUDA_R_16BF, lda, b, CUDA_R_16BF,
      ldb, &zero, c, c_type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// db (out) = dy^T (out x n) . ones (n), dy float32.
Tensor BiasGradient(cublasHandle_t handle, const Tensor& dy, int n, int out) {
  Tensor db = Tensor::Uninitialized({out}, dy.device());
  Tensor ones = Tensor::Uninitialized({n}, dy.device());
  ones.Fill(1.0f);
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUBLAS_CHECK(cuda::Cublas().sgemv(
      handle, CUBLAS_OP_N, out, n, &one, dy.device_data(), out,
      ones.device_data(), 1, &zero, db.device_data(), 1));
  return db;
}

}  // namespace

Tensor LinearForwardCuda(const Tensor& x, const Tensor& w, const Tensor& b) {
  CheckCublasProduct(x.dim(0), w.dim(0), w.dim(1));
  OnDevice on(x);
  if (x.dtype() == DType::kBFloat16) {
    const int n = static_cast<int>(x.dim(0)), in = static_cast<int>(w.dim(0)),
              out = static_cast<int>(w.dim(1));
    Tensor y = Tensor::Uninitialized({n, out}, x.device(), x.dtype());
    if (y.numel() == 0) return y;
    GemmBf16(on.context.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, out, n, in,
             w.raw_data(), out, x.raw_data(), in, y.raw_data(), CUDA_R_16BF,
             out);
    if (b.defined()) {
      bias_add(y.raw_data(), y.dtype(), b.device_data(), n, out, 1,
               on.stream());
    }
    return y;
  }
  const int n = static_cast<int>(x.dim(0)), in = static_cast<int>(w.dim(0)),
            out = static_cast<int>(w.dim(1));
  Tensor y = Tensor::Uninitialized({n, out}, x.device());
  if (y.numel() == 0) return y;
  const float one = 1.0f, zero = 0.0f;
  // y^T (out x n) = w^T (out x in, w's memory) . x^T (in x n, x's memory).
  RINGLET_CUBLAS_CHECK(cuda::Cublas().sgemm(
      on.context.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, out, n, in, &one,
      w.device_data(), out, x.device_data(), in, &zero, y.device_data(), out));
  if (b.defined()) {
    // Row i of y gets b: bias per "channel" j of [n, out, 1].
    bias_add(y.raw_data(), y.dtype(), b.device_data(), /*batch=*/n,
             /*channels=*/out, /*spatial=*/1, on.stream());
  }
  return y;
}

LinearGrads LinearBackwardCuda(const Tensor& x, const Tensor& w, bool has_bias,
                               const Tensor& dy) {
  CheckCublasProduct(x.dim(0), w.dim(0), w.dim(1));
  OnDevice on(x);
  const int n = static_cast<int>(x.dim(0)), in = static_cast<int>(w.dim(0)),
            out = static_cast<int>(w.dim(1));
  LinearGrads g;
  if (n == 0) {  // An empty batch: zero gradients.
    g.dx = Tensor(x.shape(), x.device());
    g.dw = Tensor(w.shape(), w.device());
    if (has_bias) g.db = Tensor({out}, w.device());
    return g;
  }
  if (x.dtype() == DType::kBFloat16) {
    cublasHandle_t handle = on.context.cublas();
    g.dx = Tensor::Uninitialized(x.shape(), x.device(), x.dtype());
    g.dw = Tensor::Uninitialized(w.shape(), w.device());
    GemmBf16(handle, CUBLAS_OP_T, CUBLAS_OP_N, in, n, out, w.raw_data(), out,
             dy.raw_data(), out, g.dx.raw_data(), CUDA_R_16BF, in);
    GemmBf16(handle, CUBLAS_OP_N, CUBLAS_OP_T, out, in, n, dy.raw_data(), out,
             x.raw_data(), in, g.dw.raw_data(), CUDA_R_32F, out);
    // Summed from a widened dy ([n, out]: small).
    if (has_bias) g.db = BiasGradient(handle, dy.To(DType::kFloat32), n, out);
    return g;
  }
  // Written whole by cuBLAS with beta 0 (which does not read them).
  g.dx = Tensor::Uninitialized(x.shape(), x.device());
  g.dw = Tensor::Uninitialized(w.shape(), w.device());
  cublasHandle_t handle = on.context.cublas();
  const float one = 1.0f, zero = 0.0f;
  // dx^T (in x n) = w (in x out: w's memory transposed) . dy^T (out x n).
  RINGLET_CUBLAS_CHECK(cuda::Cublas().sgemm(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, in, n, out, &one, w.device_data(), out,
      dy.device_data(), out, &zero, g.dx.device_data(), in));
  // dw^T (out x in) = dy^T (out x n) . x (n x in: x's memory transposed).
  RINGLET_CUBLAS_CHECK(cuda::Cublas().sgemm(
      handle, CUBLAS_OP_N, CUBLAS_OP_T, out, in, n, &one, dy.device_data(), out,
      x.device_data(), in, &zero, g.dw.device_data(), out));
  if (has_bias) g.db = BiasGradient(handle, dy, n, out);
  return g;
}

// bfloat16 operands through cublasGemmEx: converted, the bias rounded
// (autocast.h).
Tensor ForwardKernel(const Tensor& x, const Tensor& w, const Tensor& b,
                     DType compute) {
  if (compute == DType::kFloat32) return LinearForwardCuda(x, w, b);
  return LinearForwardCuda(AsDType(x, DType::kBFloat16),
                           AsDType(w, DType::kBFloat16), RoundedToBf16(b));
}

LinearGrads BackwardKernel(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy, DType compute) {
  if (compute == DType::kFloat32) {
    return LinearBackwardCuda(x, w, has_bias, dy);
  }
  return LinearBackwardCuda(AsDType(x, DType::kBFloat16),
                            AsDType(w, DType::kBFloat16), has_bias,
                            AsDType(dy, DType::kBFloat16));
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::linear_forward, DeviceType::kCuda,
                        ForwardKernel);
RINGLET_REGISTER_KERNEL(kernels::linear_backward, DeviceType::kCuda,
                        BackwardKernel);

}  // namespace ringlet::nn::cuda_ops
