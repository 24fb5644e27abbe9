// The row loops of batch norm's CPU passes (nn/ops/batch_norm.cc): float32
// kernels over one [H, W] row, the float32 scratch that bfloat16 rows are
// widened into and rounded from, the epilogue's add and ReLU, and the
// passes over a tensor in memory order. Inline, so the row loops vectorise
// in the caller's -O3 unit.
#ifndef RINGLET_NN_OPS_BATCH_NORM_ROWS_H_
#define RINGLET_NN_OPS_BATCH_NORM_ROWS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "nn/ops/batch_norm.h"
#include "nn/ops/op_threads.h"
#include "nn/tensor.h"

namespace ringlet::nn::batch_norm_rows {

// The element-wise rows take their pointers as locals, restrict-qualified:
// read through a lambda's captures they are reloaded every element and the
// loops do not vectorise.
inline void NormalizeRow(const float* __restrict x, int64_t n, float mu,
                         float inv_std, float gamma, float beta,
                         float* __restrict y) {
  for (int64_t j = 0; j < n; ++j) {
    const float xh = (x[j] - mu) * inv_std;
    y[j] = gamma * xh + beta;
  }
}

// The forward's x_hat again, bit for bit (the same expression).
inline void NormalizedRow(const float* __restrict x, int64_t n, float mu,
                          float inv_std, float* __restrict x_hat) {
  for (int64_t j = 0; j < n; ++j) x_hat[j] = (x[j] - mu) * inv_std;
}

inline void ScaleShiftRow(const float* __restrict x, int64_t n, float scale,
                          float shift, float* __restrict y) {
  for (int64_t j = 0; j < n; ++j) y[j] = x[j] * scale + shift;
}

inline void AddRow(const float* __restrict other, int64_t n,
                   float* __restrict y) {
  for (int64_t j = 0; j < n; ++j) y[j] += other[j];
}

inline void ReluRow(int64_t n, float* __restrict y) {
  for (int64_t j = 0; j < n; ++j) y[j] = y[j] > 0.0f ? y[j] : 0.0f;
}

// dx = gamma inv_std (dy - mean(dy) - x_hat mean(dy x_hat)), k = gamma
// inv_std.
inline void InputGradientRow(const float* __restrict dy,
                             const float* __restrict x_hat, int64_t n, float k,
                             float mean_dy, float mean_dy_xh,
                             float* __restrict dx) {
  for (int64_t j = 0; j < n; ++j) {
    dx[j] = k * (dy[j] - mean_dy - x_hat[j] * mean_dy_xh);
  }
}

// Batch norm reads and writes bfloat16 activations a run of rows at a time,
// widened into (or rounded from) float32 scratch rows of the thread: the
// same values as converting the whole tensor first, without a float32 copy
// of it (the conversions were a tenth of a bfloat16 ResNet-18 step).
// The scratch a pass uses at once: an input or residual run widened, the
// output gradient widened and masked, x_hat, an output run before rounding.
enum Row {
  kInputRow,
  kResidualRow,
  kGradRow,
  kMaskedRow,
  kXHatRow,
  kOutRow,
  kRowCount
};
inline float* ScratchRow(Row which, int64_t n) {
  thread_local std::vector<float> rows[kRowCount];
  rows[which].resize(n);
  return rows[which].data();
}
inline const float* InRow(const Tensor& t, int64_t base, int64_t n, Row which) {
  if (t.dtype() == DType::kFloat32) return t.data() + base;
  float* row = ScratchRow(which, n);
  Bf16ToFloat(t.bf16_data() + base, row, n);
  return row;
}
inline float* OutRow(Tensor& t, int64_t base, int64_t n) {
  return t.dtype() == DType::kFloat32 ? t.data() + base
                                      : ScratchRow(kOutRow, n);
}
inline void FinishRow(Tensor& t, int64_t base, int64_t n) {
  if (t.dtype() == DType::kBFloat16) {
    FloatToBf16(ScratchRow(kOutRow, n), t.bf16_data() + base, n);
  }
}

// The epilogue on one row of the output `y` (float32 values in `row`, not
// yet rounded to y's type), in place. Add's inputs and output are in y's
// type, so a bfloat16 row is rounded before the residual is added (and
// once more by FinishRow); the ReLU needs no rounding.
inline void EpilogueRow(const BatchNormEpilogue& epilogue, Tensor& y,
                        int64_t base, int64_t n, float* row) {
  if (epilogue.residual.defined()) {
    if (y.dtype() == DType::kBFloat16) {
      FloatToBf16(row, y.bf16_data() + base, n);
      Bf16ToFloat(y.bf16_data() + base, row, n);
    }
    AddRow(InRow(epilogue.residual, base, n, kResidualRow), n, row);
  }
  if (epilogue.relu) ReluRow(n, row);
}

// Whether bfloat16 bits hold a value above zero (activation.cc's test).
inline bool Bf16Positive(uint16_t bits) {
  return static_cast<uint16_t>(bits - 1) < 0x7F80;
}

// g[j] is read whatever y[j] is: written as `y > 0 ? g : 0` GCC loads g
// through vmaskmovps, microcoded on AMD's cores.
inline void MaskRow(const float* __restrict g, const float* __restrict y,
                    int64_t n, float* __restrict out) {
  for (int64_t j = 0; j < n; ++j) {
    const float value = g[j];
    out[j] = y[j] > 0.0f ? value : 0.0f;
  }
}

// A mask of all ones or zeros, not a select: GCC vectorises this form.
inline void MaskBf16Row(const uint16_t* __restrict g,
                        const uint16_t* __restrict y, int64_t n,
                        uint16_t* __restrict out) {
  for (int64_t j = 0; j < n; ++j) {
    out[j] =
        g[j] & static_cast<uint16_t>(-static_cast<int>(Bf16Positive(y[j])));
  }
}

inline uint16_t* ScratchBits(int64_t n) {
  thread_local std::vector<uint16_t> bits;
  bits.resize(n);
  return bits.data();
}

// One row of the output gradient in float32, through the epilogue's ReLU
// (zero where its output was not above zero, as ReluBackward). With
// `d_residual`, the masked row is written there too, in dy's type (a
// float32 one is written there only, and returned from there):
// bfloat16 bits are masked before widening, so every bit is ReluBackward's.
inline const float* GradientRow(const Tensor& dy, const Tensor& relu_output,
                                int64_t base, int64_t n, Tensor* d_residual) {
  if (!relu_output.defined()) return InRow(dy, base, n, kGradRow);
  if (dy.dtype() == DType::kBFloat16 &&
      relu_output.dtype() == DType::kBFloat16) {
    uint16_t* bits =
        d_residual != nullptr ? d_residual->bf16_data() + base : ScratchBits(n);
    MaskBf16Row(dy.bf16_data() + base, relu_output.bf16_data() + base, n, bits);
    float* row = ScratchRow(kGradRow, n);
    Bf16ToFloat(bits, row, n);
    return row;
  }
  const bool float32_out =
      d_residual != nullptr && dy.dtype() == DType::kFloat32;
  float* masked =
      float32_out ? d_residual->data() + base : ScratchRow(kMaskedRow, n);
  MaskRow(InRow(dy, base, n, kGradRow), InRow(relu_output, base, n, kOutRow), n,
          masked);
  if (d_residual != nullptr && !float32_out) {
    // A bfloat16 gradient's masked values are its own, widened: rounding
    // gives its bits back (ReluBackward of mixed types does the same).
    FloatToBf16(masked, d_residual->bf16_data() + base, n);
  }
  return masked;
}

// Tensors below this many values run on the calling thread alone.
inline constexpr int64_t kMinValuesForThreads = int64_t{1} << 16;

// Runs fn(first_row, rows) over every [H, W] row of an [N, C, H, W] tensor
// in memory order, in runs of consecutive rows (about 4096 values, or one
// row where rows are longer), the runs split over the op threads. Channel
// by channel each row is a jump of C rows, which the hardware prefetchers
// follow poorly once a pass reads three tensors (the fused backward was
// 1.3x slower so at 14x14); and a run is widened from, or rounded to,
// bfloat16 in one call, where 4x4 rows paid a call per 16 values.
inline void ForEachRowRun(const Shape& shape,
                          const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t rows = shape[0] * shape[1];
  const int64_t hw = std::max<int64_t>(shape[2] * shape[3], 1);
  const int64_t run = std::max<int64_t>(1, 4096 / hw);
  const int64_t runs = (rows + run - 1) / run;
  ParallelForElements(runs,
                      std::max<int64_t>(1, kMinValuesForThreads / (run * hw)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t r = begin; r < end; ++r) {
                          const int64_t first = r * run;
                          fn(first, std::min(run, rows - first));
                        }
                      });
}

// Per-channel sums of `k` values per row: fn(first, rows, out) writes the
// k values of each row of a run (out[r * k + j]) in memory order
// (ForEachRowRun), then each channel's are added over the images in
// order, into totals[j * C + channel]. The same additions in the same order
// as a loop channel by channel, so the same bits whatever the thread count.
inline std::vector<double> ChannelSums(
    const Shape& shape, int k,
    const std::function<void(int64_t, int64_t, double*)>& fn) {
  const int64_t n = shape[0], c = shape[1];
  std::vector<double> per_row(n * c * k);
  ForEachRowRun(shape, [&](int64_t first, int64_t rows) {
    fn(first, rows, per_row.data() + first * k);
  });
  std::vector<double> totals(k * c, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int j = 0; j < k; ++j) {
        totals[j * c + ch] += per_row[(i * c + ch) * k + j];
      }
    }
  }
  return totals;
}

}  // namespace ringlet::nn::batch_norm_rows

#endif  // RINGLET_NN_OPS_BATCH_NORM_ROWS_H_
