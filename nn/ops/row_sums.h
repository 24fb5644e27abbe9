// Sums of float rows in double, for per-channel statistics and gradients
// (batch norm, convolution bias gradients): a channel can hold millions of
// values, which float32 sums round past what the equivalence tests allow.
// kLanes running sums so the adds do not wait on one another (one chain of
// dependent double adds was most of batch norm's time) and fill two AVX
// registers of four doubles. The order depends on n only, so a row's sum
// is the same bits whichever thread computes it.
#ifndef RINGLET_NN_OPS_ROW_SUMS_H_
#define RINGLET_NN_OPS_ROW_SUMS_H_

#include <cstdint>

namespace ringlet::nn::row_sums {

constexpr int kLanes = 8;

inline double Total(const double (&s)[kLanes]) {
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// sum(in[j])
inline double Sum(const float* in, int64_t n) {
  double s[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) s[l] += in[j + l];
  }
  for (; j < n; ++j) s[0] += in[j];
  return Total(s);
}

// sum((in[j] - mean)^2)
inline double SumSquaredDeviations(const float* in, int64_t n, double mean) {
  double s[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      s[l] += (in[j + l] - mean) * (in[j + l] - mean);
    }
  }
  for (; j < n; ++j) s[0] += (in[j] - mean) * (in[j] - mean);
  return Total(s);
}

// sum(a[j] b[j])
inline double SumProducts(const float* a, const float* b, int64_t n) {
  double s[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) s[l] += a[j + l] * b[j + l];
  }
  for (; j < n; ++j) s[0] += a[j] * b[j];
  return Total(s);
}

}  // namespace ringlet::nn::row_sums

#endif  // RINGLET_NN_OPS_ROW_SUMS_H_
