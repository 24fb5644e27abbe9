// The fully connected layer on GPUs through cuBLAS. Row-major [N, in] x
// [in, out] is, to column-major cuBLAS, y^T = w^T x^T: each product below
// is written in those column-major terms. Default math (no TF32) unless
// SetGpuPrecision(kTf32) (the cuBLAS handle's math mode, device_context.cc).
#include <cublas_v2.h>

#include "nn/cuda/elementwise_kernels.h"
#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/cuda/cuda_ops.h"

namespace ringlet::nn::cuda_ops {

Tensor CudaOps::LinearForward(const Tensor& x, const Tensor& w,
                              const Tensor& b) {
  CheckCublasProduct(x.dim(0), w.dim(0), w.dim(1));
  OnDevice on(x);
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
    cuda::bias_add_forward(y.device_data(), b.device_data(), /*batch=*/n,
                           /*channels=*/out,
                           /*spatial=*/1, on.stream());
  }
  return y;
}

LinearGrads CudaOps::LinearBackward(const Tensor& x, const Tensor& w,
                                    bool has_bias, const Tensor& dy) {
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
  // Written whole by cuBLAS with beta 0 (which does not read them).
  g.dx = Tensor::Uninitialized(x.shape(), x.device());
  g.dw = Tensor::Uninitialized(w.shape(), w.device());
  if (has_bias) g.db = Tensor::Uninitialized({out}, w.device());
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
  if (has_bias) {
    // db (out) = dy^T (out x n) . ones (n).
    Tensor ones = Tensor::Uninitialized({n}, x.device());
    ones.Fill(1.0f);
    RINGLET_CUBLAS_CHECK(cuda::Cublas().sgemv(
        handle, CUBLAS_OP_N, out, n, &one, dy.device_data(), out,
        ones.device_data(), 1, &zero, g.db.device_data(), 1));
  }
  return g;
}

}  // namespace ringlet::nn::cuda_ops
