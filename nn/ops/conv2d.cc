#include "nn/ops/conv2d.h"

#include <algorithm>
#include <string>
#include <vector>

#include "nn/ops/cpu_conv_backend.h"
#include "nn/ops/cuda/cuda_ops.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/eigen_maps.h"
#include "nn/ops/onednn/conv2d_onednn.h"
#include "nn/ops/parallel.h"

namespace ringlet::nn {
namespace {

struct Geometry {
  int64_t n, c, h, w, k, r, s, p, q, stride, pad;
  int64_t crs() const { return c * r * s; }
  int64_t pq() const { return p * q; }
};

Geometry Check(const Tensor& x, const Tensor& w, const Conv2dParams& params) {
  ExpectShape("conv2d", "input", x, {-1, -1, -1, -1});
  ExpectShape("conv2d", "weight", w, {-1, x.dim(1), -1, -1});
  const std::string shapes =
      "input " + ToString(x.shape()) + ", weight " + ToString(w.shape());
  if (params.stride < 1 || params.padding < 0) {
    throw ShapeError("conv2d: stride " + std::to_string(params.stride) +
                     " and padding " + std::to_string(params.padding) +
                     " must be >= 1 and >= 0 (" + shapes + ")");
  }
  Geometry g{x.dim(0), x.dim(1),      x.dim(2),      x.dim(3),
             w.dim(0), w.dim(2),      w.dim(3),      0,
             0,        params.stride, params.padding};
  if (g.h + 2 * g.pad < g.r || g.w + 2 * g.pad < g.s || g.r < 1 || g.s < 1) {
    throw ShapeError("conv2d: a " + std::to_string(g.r) + "x" +
                     std::to_string(g.s) + " kernel does not fit the " +
                     std::to_string(g.h) + "x" + std::to_string(g.w) +
                     " input with padding " + std::to_string(g.pad) + " (" +
                     shapes + ")");
  }
  g.p = (g.h + 2 * g.pad - g.r) / g.stride + 1;
  g.q = (g.w + 2 * g.pad - g.s) / g.stride + 1;
  return g;
}

// The output columns q whose input column q stride - pad + s lies inside
// [0, W): q in [lo, hi). Computed once per kernel column, so the copy loops
// below have no bounds test per element.
struct ColumnRange {
  int64_t lo, hi;
};
ColumnRange ValidColumns(const Geometry& g, int64_t s) {
  // q stride - pad + s >= 0  <=>  q >= ceil((pad - s) / stride)
  const int64_t lo_num = g.pad - s;
  int64_t lo = lo_num <= 0 ? 0 : (lo_num + g.stride - 1) / g.stride;
  // q stride - pad + s <= W - 1  <=>  q <= floor((W - 1 + pad - s) / stride)
  const int64_t hi_num = g.w - 1 + g.pad - s;
  int64_t hi = hi_num < 0 ? 0 : hi_num / g.stride + 1;
  hi = std::min(hi, g.q);
  lo = std::min(lo, hi);
  return {lo, hi};
}

// cols[(c R + r) S + s][p Q + q] = x[c][p stride - pad + r][q stride - pad + s]
// (zero outside the input); row i of cols starts at cols + i ld, so several
// images can sit side by side in one matrix.
void Im2Col(const Geometry& g, const float* x, float* cols, int64_t ld) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t r = 0; r < g.r; ++r) {
      for (int64_t s = 0; s < g.s; ++s) {
        float* row = cols + ((c * g.r + r) * g.s + s) * ld;
        const ColumnRange valid = ValidColumns(g, s);
        for (int64_t p = 0; p < g.p; ++p) {
          const int64_t hi = p * g.stride - g.pad + r;
          float* out = row + p * g.q;
          if (hi < 0 || hi >= g.h) {
            std::fill(out, out + g.q, 0.0f);
            continue;
          }
          std::fill(out, out + valid.lo, 0.0f);
          std::fill(out + valid.hi, out + g.q, 0.0f);
          // Input column of output column q: q stride + shift.
          const float* in = x + (c * g.h + hi) * g.w;
          const int64_t shift = s - g.pad;
          if (g.stride == 1 && valid.hi > valid.lo) {
            std::copy(in + valid.lo + shift, in + valid.hi + shift,
                      out + valid.lo);
          } else {
            for (int64_t q = valid.lo; q < valid.hi; ++q) {
              out[q] = in[q * g.stride + shift];
            }
          }
        }
      }
    }
  }
}

// The adjoint of Im2Col: adds every column entry back to its input pixel.
void Col2Im(const Geometry& g, const float* cols, int64_t ld, float* dx) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t r = 0; r < g.r; ++r) {
      for (int64_t s = 0; s < g.s; ++s) {
        const float* row = cols + ((c * g.r + r) * g.s + s) * ld;
        const ColumnRange valid = ValidColumns(g, s);
        for (int64_t p = 0; p < g.p; ++p) {
          const int64_t hi = p * g.stride - g.pad + r;
          if (hi < 0 || hi >= g.h) continue;
          float* out = dx + (c * g.h + hi) * g.w;
          const int64_t shift = s - g.pad;
          const float* in = row + p * g.q;
          for (int64_t q = valid.lo; q < valid.hi; ++q) {
            out[q * g.stride + shift] += in[q];
          }
        }
      }
    }
  }
}

// Images whose columns go into one matrix product. One image of a small
// output (ResNet's last stage: 4x4 positions against a 512 x 4608 weight)
// makes a product that streams the whole weight for a few columns; a group
// of images reuses it, and the weight gradient's inner dimension grows from
// P Q to that many columns.
constexpr int64_t kTargetColumns = 1024;
constexpr int64_t kMaxImagesPerGroup = 16;
int64_t ImagesPerGroup(const Geometry& g) {
  return std::clamp<int64_t>(kTargetColumns / std::max<int64_t>(1, g.pq()), 1,
                             kMaxImagesPerGroup);
}

int64_t NumGroups(const Geometry& g, int64_t group) {
  return (g.n + group - 1) / group;
}

int64_t ImageSize(const Geometry& g) { return g.c * g.h * g.w; }

}  // namespace

Tensor Conv2dForward(const Tensor& x, const Tensor& w, const Tensor& b,
                     const Conv2dParams& params) {
  const Geometry g = Check(x, w, params);
  if (b.defined()) ExpectShape("conv2d", "bias", b, {g.k});
  if (OpDevice("conv2d", {&x, &w, &b}).is_cuda()) {
    return cuda_ops::Conv2dForward(x, w, b, params);
  }
  if (GetCpuConvBackend() == CpuConvBackend::kOneDnn) {
    return onednn::Conv2dForward(x, w, b, params);
  }
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
        Im2Col(g, x.data() + (n0 + i) * ImageSize(g), cols.data() + i * g.pq(),
               ld);
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

Conv2dGrads Conv2dBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy, const Conv2dParams& params,
                           bool need_dx) {
  const Geometry g = Check(x, w, params);
  ExpectShape("conv2d backward", "output gradient", dy, {g.n, g.k, g.p, g.q});
  if (OpDevice("conv2d backward", {&x, &w, &dy}).is_cuda()) {
    return cuda_ops::Conv2dBackward(x, w, has_bias, dy, params, need_dx);
  }
  if (GetCpuConvBackend() == CpuConvBackend::kOneDnn) {
    return onednn::Conv2dBackward(x, w, has_bias, dy, params, need_dx);
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
        Im2Col(g, x.data() + (n0 + i) * ImageSize(g), cols.data() + i * g.pq(),
               ld);
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
                 grads.dx.data() + (n0 + i) * ImageSize(g));
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

}  // namespace ringlet::nn
