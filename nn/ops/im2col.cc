#include "nn/ops/im2col.h"

#include <algorithm>

namespace ringlet::nn {
namespace {

// The output columns q whose input column q stride - pad + s lies inside
// [0, W): q in [lo, hi). Computed once per kernel column, so the copy loops
// below have no bounds test per element.
struct ColumnRange {
  int64_t lo, hi;
};
ColumnRange ValidColumns(const ConvGeometry& g, int64_t s) {
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

}  // namespace

void Im2Col(const ConvGeometry& g, const float* x, float* cols, int64_t ld) {
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

void Col2Im(const ConvGeometry& g, const float* cols, int64_t ld, float* dx) {
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

}  // namespace ringlet::nn
