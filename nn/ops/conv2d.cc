#include "nn/ops/conv2d.h"

#include <algorithm>
#include <string>
#include <vector>

#include "nn/ops/eigen_maps.h"
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
// (zero outside the input).
void Im2Col(const Geometry& g, const float* x, float* cols) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t r = 0; r < g.r; ++r) {
      for (int64_t s = 0; s < g.s; ++s) {
        float* row = cols + ((c * g.r + r) * g.s + s) * g.pq();
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
void Col2Im(const Geometry& g, const float* cols, float* dx) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t r = 0; r < g.r; ++r) {
      for (int64_t s = 0; s < g.s; ++s) {
        const float* row = cols + ((c * g.r + r) * g.s + s) * g.pq();
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

}  // namespace

Tensor Conv2dForward(const Tensor& x, const Tensor& w, const Tensor& b,
                     const Conv2dParams& params) {
  const Geometry g = Check(x, w, params);
  if (b.defined()) ExpectShape("conv2d", "bias", b, {g.k});
  Tensor y = Tensor::Uninitialized({g.n, g.k, g.p, g.q});
  const ConstMatrixMap wm(w.data(), g.k, g.crs());
  // Images are independent: each worker takes a run of them.
  ParallelFor(g.n, [&](int64_t begin, int64_t end, int) {
    RowMatrix cols(g.crs(), g.pq());
    for (int64_t n = begin; n < end; ++n) {
      Im2Col(g, x.data() + n * g.c * g.h * g.w, cols.data());
      MatrixMap ym(y.data() + n * g.k * g.pq(), g.k, g.pq());
      ym.noalias() = wm * cols;
      if (b.defined()) ym.colwise() += ConstVectorMap(b.data(), g.k);
    }
  });
  return y;
}

Conv2dGrads Conv2dBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy, const Conv2dParams& params,
                           bool need_dx) {
  const Geometry g = Check(x, w, params);
  ExpectShape("conv2d backward", "output gradient", dy, {g.n, g.k, g.p, g.q});
  Conv2dGrads grads;
  if (need_dx) grads.dx = Tensor(x.shape());
  grads.dw = Tensor(w.shape());
  if (has_bias) grads.db = Tensor({g.k});
  const ConstMatrixMap wm(w.data(), g.k, g.crs());
  // Each worker sums its images' weight and bias gradients apart; the sums
  // are added in worker order, so results do not depend on timing.
  const int workers = static_cast<int>(std::min<int64_t>(OpThreads(), g.n));
  std::vector<RowMatrix> dw_parts(workers, RowMatrix::Zero(g.k, g.crs()));
  std::vector<Eigen::VectorXf> db_parts(workers, Eigen::VectorXf::Zero(g.k));
  ParallelFor(g.n, [&](int64_t begin, int64_t end, int worker) {
    RowMatrix cols(g.crs(), g.pq());
    RowMatrix dcols(g.crs(), g.pq());
    for (int64_t n = begin; n < end; ++n) {
      const ConstMatrixMap dym(dy.data() + n * g.k * g.pq(), g.k, g.pq());
      Im2Col(g, x.data() + n * g.c * g.h * g.w, cols.data());
      dw_parts[worker].noalias() += dym * cols.transpose();
      if (need_dx) {
        dcols.noalias() = wm.transpose() * dym;
        Col2Im(g, dcols.data(), grads.dx.data() + n * g.c * g.h * g.w);
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
