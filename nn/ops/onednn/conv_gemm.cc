#include "nn/ops/onednn/conv_gemm.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "oneapi/dnnl/dnnl.h"

namespace ringlet::nn::onednn {
namespace {

// Row-major C (m x n) = alpha op(A) op(B) + beta C, as dnnl_sgemm defines it.
void Sgemm(char transa, char transb, int64_t m, int64_t n, int64_t k,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
           float* c, int64_t ldc) {
  const dnnl_status_t status =
      dnnl_sgemm(transa, transb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success) {
    throw std::runtime_error("conv2d: oneDNN sgemm failed (status " +
                             std::to_string(status) + ") for " +
                             std::to_string(m) + "x" + std::to_string(n) + "x" +
                             std::to_string(k));
  }
}

float* Floats(AlignedBuffer& buffer, int64_t count) {
  return static_cast<float*>(buffer.Get(count * sizeof(float)));
}

// The group's images unfolded side by side: CRS rows of N P Q columns.
const float* Unfold(const ConvGeometry& g, const float* x,
                    AlignedBuffer& buffer) {
  const int64_t columns = g.n * g.pq();
  float* cols = Floats(buffer, g.crs() * columns);
  for (int64_t i = 0; i < g.n; ++i) {
    Im2Col(g, x + i * g.image_size(), cols + i * g.pq(), columns);
  }
  return cols;
}

// dy (N x K x PQ) as one K x (N PQ) matrix, images side by side.
const float* OutputGradientAsMatrix(const ConvGeometry& g, const float* dy,
                                    AlignedBuffer& buffer) {
  const int64_t columns = g.n * g.pq();
  float* m = Floats(buffer, g.k * columns);
  for (int64_t i = 0; i < g.n; ++i) {
    for (int64_t k = 0; k < g.k; ++k) {
      std::copy_n(dy + (i * g.k + k) * g.pq(), g.pq(),
                  m + k * columns + i * g.pq());
    }
  }
  return m;
}

}  // namespace

void GroupGemmForward(const ConvGeometry& g, const float* x, const float* w,
                      const float* b, float* y, GroupGemmBuffers& buffers) {
  const int64_t columns = g.n * g.pq();
  const float* cols = Unfold(g, x, buffers.cols);
  float* product = Floats(buffers.product, g.k * columns);
  // K x (N PQ) = W (K x CRS) cols (CRS x N PQ)
  Sgemm('N', 'N', g.k, columns, g.crs(), w, g.crs(), cols, columns, 0.0f,
        product, columns);
  for (int64_t i = 0; i < g.n; ++i) {
    for (int64_t k = 0; k < g.k; ++k) {
      const float* from = product + k * columns + i * g.pq();
      float* to = y + (i * g.k + k) * g.pq();
      const float bias = b ? b[k] : 0.0f;
      for (int64_t j = 0; j < g.pq(); ++j) to[j] = from[j] + bias;
    }
  }
}

void GroupGemmBackwardData(const ConvGeometry& g, const float* w,
                           const float* dy, float* dx,
                           GroupGemmBuffers& buffers) {
  const int64_t columns = g.n * g.pq();
  const float* dy_matrix = OutputGradientAsMatrix(g, dy, buffers.product);
  float* dcols = Floats(buffers.cols, g.crs() * columns);
  // CRS x (N PQ) = W^T (CRS x K) dy (K x N PQ)
  Sgemm('T', 'N', g.crs(), columns, g.k, w, g.crs(), dy_matrix, columns, 0.0f,
        dcols, columns);
  std::fill_n(dx, g.n * g.image_size(), 0.0f);
  for (int64_t i = 0; i < g.n; ++i) {
    Col2Im(g, dcols + i * g.pq(), columns, dx + i * g.image_size());
  }
}

void GroupGemmAddWeightGradient(const ConvGeometry& g, const float* x,
                                const float* dy, float* dw,
                                GroupGemmBuffers& buffers) {
  const int64_t columns = g.n * g.pq();
  const float* cols = Unfold(g, x, buffers.cols);
  const float* dy_matrix = OutputGradientAsMatrix(g, dy, buffers.product);
  // K x CRS += dy (K x N PQ) cols^T (N PQ x CRS)
  Sgemm('N', 'T', g.k, g.crs(), columns, dy_matrix, columns, cols, columns,
        1.0f, dw, g.crs());
}

}  // namespace ringlet::nn::onednn
