// The unfolding behind convolution as a matrix product, shared by the Eigen
// convolution (nn/ops/conv2d.cc) and the batched-GEMM one that runs under
// oneDNN's matrix products (nn/ops/onednn/conv_gemm.cc).
//
// Shape letters as in conv2d.h: images of C x H x W, K output channels,
// R x S kernel, P x Q output.
#ifndef RINGLET_NN_OPS_IM2COL_H_
#define RINGLET_NN_OPS_IM2COL_H_

#include <cstdint>

namespace ringlet::nn {

struct ConvGeometry {
  int64_t n, c, h, w, k, r, s, p, q, stride, pad;
  int64_t crs() const { return c * r * s; }
  int64_t pq() const { return p * q; }
  int64_t image_size() const { return c * h * w; }
};

// cols[(c R + r) S + s][p Q + q] = x[c][p stride - pad + r][q stride - pad + s]
// (zero outside the input) for one image x; row i of cols starts at
// cols + i ld, so several images can sit side by side in one matrix.
void Im2Col(const ConvGeometry& g, const float* x, float* cols, int64_t ld);

// The adjoint of Im2Col: adds every column entry back to its input pixel
// of one image dx.
void Col2Im(const ConvGeometry& g, const float* cols, int64_t ld, float* dx);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_IM2COL_H_
