// 2-D convolution on CPU devices: oneDNN's kernels (cpu_conv_backend.h),
// or im2col and Eigen's matrix products. In bfloat16 oneDNN's bfloat16
// kernels where the CPU has the instructions, else the reference
// (autocast.h): float32 sums of the bfloat16 values, rounded once.
#include "nn/ops/conv2d.h"

#include <algorithm>
#include <vector>

#include "nn/ops/activation.h"
#include "nn/ops/autocast.h"
#include "nn/ops/cpu_conv_backend.h"
#include "nn/ops/eigen_maps.h"
#include "nn/ops/im2col.h"
#include "nn/ops/op_threads.h"
#ifndef RINGLET_WITHOUT_ONEDNN
#include "nn/ops/onednn/conv2d_onednn.h"
#endif

namespace ringlet::nn {
namespace {

// The geometry of shapes the front has checked.
ConvGeometry Geometry(const Tensor& x, const Tensor& w,
                      const Conv2dParams& params) {
  ConvGeometry g{x.dim(0), x.dim(1),      x.dim(2),      x.dim(3),
                 w.dim(0), w.dim(2),      w.dim(3),      0,
                 0,        params.stride, params.padding};
  g.p = (g.h + 2 * g.pad - g.r) / g.stride + 1;
  g.q = (g.w + 2 * g.pad - g.s) / g.stride + 1;
  return g;
}

// Images whose columns go into one matrix product. One image of a small
// output (ResNet's last stage: 4x4 positions against a 512 x 4608 weight)
// makes a product that streams the whole weight for a few columns; a group
// of images reuses it, and the weight gradient's inner dimension grows from
// P Q to that many columns.
constexpr int64_t kTargetColumns = 1024;
constexpr int64_t kMaxImagesPerGroup = 16;
int64_t ImagesPerGroup(const ConvGeometry& g) {
  return std::clamp<int64_t>(kTargetColumns / std::max<int64_t>(1, g.pq()), 1,
                             kMaxImagesPerGroup);
}

int64_t NumGroups(const ConvGeometry& g, int64_t group) {
  return (g.n + group - 1) / group;
}

// With `relu`, ReluForward's values: oneDNN's post-op where it runs,
// else the separate op after the convolution.
Tensor Conv2dForwardFloat32(const Tensor& x, const Tensor& w, const Tensor& b,
                            const Conv2dParams& params, bool relu) {
  const ConvGeometry g = Geometry(x, w, params);
  if (GetCpuConvBackend() == CpuConvBackend::kOneDnn) {
    // Never true in a build without oneDNN (the setting refuses it).
#ifndef RINGLET_WITHOUT_ONEDNN
    const bool post_op = relu && onednn::ReluRunsAsPostOp(x, w, params);
    const Tensor y = onednn::Conv2dForward(x, w, b, params, post_op);
    return relu && !post_op ? ReluForward(y) : y;
#endif
  }
  if (relu) return ReluForward(Conv2dForwardFloat32(x, w, b, params, false));
  Tensor y = Tensor::Uninitialized({g.n, g.k, g.p, g.q});
  const ConstMatrixMap wm(w.data(), g.k, g.crs());
  const int64_t group = ImagesPerGroup(g);
  // Images are independent: each worker takes a run of groups. Groups start
  // at multiples of `group` whatever the threads, so every image sees the
  // same products and the result does not depend on the thread count.
  ParallelFor(NumGroups(g, group), [&](int64_t begin, int64_t end, int) {
    std::vector<float> cols(g.crs() * group * g.pq());
    RowMatrix out(g.k, group * g.pq());
    for (int64_t n0 = begin * group; n0 < std::min(g.n, end * group);
         n0 += group) {
      const int64_t images = std::min(group, g.n - n0);
      const int64_t ld = images * g.pq();
      for (int64_t i = 0; i < images; ++i) {
        Im2Col(g, x.data() + (n0 + i) * g.image_size(),
               cols.data() + i * g.pq(), ld);
      }
      auto ym = out.leftCols(ld);
      ym.noalias() = wm * ConstMatrixMap(cols.data(), g.crs(), ld);
      for (int64_t i = 0; i < images; ++i) {
        MatrixMap yi(y.data() + (n0 + i) * g.k * g.pq(), g.k, g.pq());
        yi = ym.middleCols(i * g.pq(), g.pq());
        if (b.defined()) yi.colwise() += ConstVectorMap(b.data(), g.k);
      }
    }
  });
  return y;
}

Conv2dGrads Conv2dBackwardFloat32(const Tensor& x, const Tensor& w,
                                  bool has_bias, const Tensor& dy,
                                  const Conv2dParams& params, bool need_dx) {
  const ConvGeometry g = Geometry(x, w, params);
  if (GetCpuConvBackend() == CpuConvBackend::kOneDnn) {
    // Never true in a build without oneDNN (the setting refuses it).
#ifndef RINGLET_WITHOUT_ONEDNN
    return onednn::Conv2dBackward(x, w, has_bias, dy, params, need_dx);
#endif
  }
  Conv2dGrads grads;
  if (need_dx) grads.dx = Tensor(x.shape());
  grads.dw = Tensor(w.shape());
  if (has_bias) grads.db = Tensor({g.k});
  const ConstMatrixMap wm(w.data(), g.k, g.crs());
  const int64_t group = ImagesPerGroup(g);
  // Each worker sums its images' weight and bias gradients apart; the sums
  // are added in worker order, so results do not depend on timing.
  const int64_t groups = NumGroups(g, group);
  const int workers = static_cast<int>(std::min<int64_t>(OpThreads(), groups));
  std::vector<RowMatrix> dw_parts(workers, RowMatrix::Zero(g.k, g.crs()));
  std::vector<Eigen::VectorXf> db_parts(workers, Eigen::VectorXf::Zero(g.k));
  ParallelFor(groups, [&](int64_t begin, int64_t end, int worker) {
    std::vector<float> cols(g.crs() * group * g.pq());
    RowMatrix dcols(g.crs(), group * g.pq());
    RowMatrix dyg(g.k, group * g.pq());
    for (int64_t n0 = begin * group; n0 < std::min(g.n, end * group);
         n0 += group) {
      const int64_t images = std::min(group, g.n - n0);
      const int64_t ld = images * g.pq();
      for (int64_t i = 0; i < images; ++i) {
        Im2Col(g, x.data() + (n0 + i) * g.image_size(),
               cols.data() + i * g.pq(), ld);
        dyg.middleCols(i * g.pq(), g.pq()) =
            ConstMatrixMap(dy.data() + (n0 + i) * g.k * g.pq(), g.k, g.pq());
      }
      const auto dym = dyg.leftCols(ld);
      dw_parts[worker].noalias() +=
          dym * ConstMatrixMap(cols.data(), g.crs(), ld).transpose();
      if (need_dx) {
        auto dc = dcols.leftCols(ld);
        dc.noalias() = wm.transpose() * dym;
        for (int64_t i = 0; i < images; ++i) {
          Col2Im(g, dcols.data() + i * g.pq(), dcols.cols(),
                 grads.dx.data() + (n0 + i) * g.image_size());
        }
      }
      if (has_bias) db_parts[worker] += dym.rowwise().sum();
    }
  });
  MatrixMap dwm(grads.dw.data(), g.k, g.crs());
  for (const RowMatrix& part : dw_parts) dwm += part;
  if (has_bias) {
    VectorMap db(grads.db.data(), g.k);
    for (const Eigen::VectorXf& part : db_parts) db += part;
  }
  return grads;
}

// bfloat16 convolutions on oneDNN's kernels, where oneDNN is the backend
// and the CPU has the instructions.
bool OneDnnBf16() {
#ifndef RINGLET_WITHOUT_ONEDNN
  return GetCpuConvBackend() == CpuConvBackend::kOneDnn &&
         onednn::SupportsBf16();
#else
  return false;
#endif
}

Tensor Conv2dForwardCpu(const Tensor& x, const Tensor& w, const Tensor& b,
                        const Conv2dParams& params, DType compute, bool relu) {
  if (compute == DType::kFloat32) {
    return Conv2dForwardFloat32(x, w, b, params, relu);
  }
  if (OneDnnBf16()) {
#ifndef RINGLET_WITHOUT_ONEDNN
    const Tensor xb = AsDType(x, DType::kBFloat16);
    const Tensor wb = AsDType(w, DType::kBFloat16);
    const bool post_op = relu && onednn::ReluRunsAsPostOp(xb, wb, params);
    const Tensor y =
        onednn::Conv2dForward(xb, wb, RoundedToBf16(b), params, post_op);
    return relu && !post_op ? ReluForward(y) : y;
#endif
  }
  // The ReLU after rounding: the same bits as before it (no rounding is
  // involved in a ReLU).
  const Tensor y =
      AsDType(Conv2dForwardFloat32(RoundedToBf16(x), RoundedToBf16(w),
                                   RoundedToBf16(b), params, false),
              DType::kBFloat16);
  return relu ? ReluForward(y) : y;
}

Conv2dGrads Conv2dBackwardCpu(const Tensor& x, const Tensor& w, bool has_bias,
                              const Tensor& dy, const Conv2dParams& params,
                              bool need_dx, DType compute) {
  if (compute == DType::kFloat32) {
    return Conv2dBackwardFloat32(x, w, has_bias, dy, params, need_dx);
  }
  if (OneDnnBf16()) {
#ifndef RINGLET_WITHOUT_ONEDNN
    return onednn::Conv2dBackward(
        AsDType(x, DType::kBFloat16), AsDType(w, DType::kBFloat16), has_bias,
        AsDType(dy, DType::kBFloat16), params, need_dx);
#endif
  }
  return Conv2dBackwardFloat32(RoundedToBf16(x), RoundedToBf16(w), has_bias,
                               RoundedToBf16(dy), params, need_dx);
}

// bfloat16 where oneDNN's bfloat16 kernels take the weight; else w.
Tensor Conv2dComputeWeightCpu(const Tensor&, const Tensor& w, DType compute) {
  return compute == DType::kBFloat16 && OneDnnBf16()
             ? AsDType(w, DType::kBFloat16)
             : w;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::conv2d_forward, DeviceType::kCpu,
                        Conv2dForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::conv2d_backward, DeviceType::kCpu,
                        Conv2dBackwardCpu);
RINGLET_REGISTER_KERNEL(kernels::conv2d_compute_weight, DeviceType::kCpu,
                        Conv2dComputeWeightCpu);

}  // namespace ringlet::nn
