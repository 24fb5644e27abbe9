// Convolutions as one matrix product per group of images, through oneDNN's
// sgemm: im2col of a group's images side by side, then a product whose
// inner or outer dimension spans the whole group.
//
// Why: on small planes (ResNet-18's 7x7 and 4x4 stages) oneDNN's direct
// kernels run at 60-70% of the CPU's peak, and its own GEMM-based kernels
// make one product per image, whose weight gradient streams the whole
// 512 x 4608 weight matrix through memory for 16 positions per image. A
// group's product reaches sgemm's speed (85-90% of peak here); unfolding the
// images costs a few percent of that. Which shapes and passes take this
// path is a rule on shapes (conv_plans.h: RunsAsGroupGemm), measured by
// conv_layout_bench.
//
// Each function runs on the calling thread (oneDNN's OpenMP set to one
// thread by the caller) over one group of `g.n` images, with the caller's
// scratch buffers, so the results do not depend on which thread runs it.
#ifndef RINGLET_NN_OPS_ONEDNN_CONV_GEMM_H_
#define RINGLET_NN_OPS_ONEDNN_CONV_GEMM_H_

#include <cstdint>

#include "nn/ops/im2col.h"
#include "nn/ops/onednn/aligned_buffer.h"

namespace ringlet::nn::onednn {

struct GroupGemmBuffers {
  AlignedBuffer cols, product;
};

// y (g.n images of K x P x Q) = w (K x C x R x S) applied to x, plus b
// (K values) unless b is null.
void GroupGemmForward(const ConvGeometry& g, const float* x, const float* w,
                      const float* b, float* y, GroupGemmBuffers& buffers);

// dx (g.n images of C x H x W) = the input gradient of dy; overwrites dx.
void GroupGemmBackwardData(const ConvGeometry& g, const float* w,
                           const float* dy, float* dx,
                           GroupGemmBuffers& buffers);

// dw (K x C x R x S) += the weight gradient of the group's images.
void GroupGemmAddWeightGradient(const ConvGeometry& g, const float* x,
                                const float* dy, float* dw,
                                GroupGemmBuffers& buffers);

}  // namespace ringlet::nn::onednn

#endif  // RINGLET_NN_OPS_ONEDNN_CONV_GEMM_H_
