#include "nn/testing/gradient_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace ringlet::nn::testing {

Tensor RandomTensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t(shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = dist(rng);
  return t;
}

double Project(const Tensor& y, const Tensor& r) {
  double sum = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    sum += static_cast<double>(y.data()[i]) * r.data()[i];
  }
  return sum;
}

void ExpectGradientNear(const std::string& what, Tensor x,
                        const Tensor& analytic,
                        const std::function<double()>& loss, float step,
                        double tolerance) {
  ASSERT_EQ(x.shape(), analytic.shape()) << what;
  int failures = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float saved = x.data()[i];
    x.data()[i] = saved + step;
    const double plus = loss();
    x.data()[i] = saved - step;
    const double minus = loss();
    x.data()[i] = saved;
    const double numeric = (plus - minus) / (2.0 * step);
    const double a = analytic.data()[i];
    const double scale = std::max({1.0, std::fabs(a), std::fabs(numeric)});
    if (std::fabs(a - numeric) > tolerance * scale && ++failures <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: analytic " << a << ", numeric "
                    << numeric << " (step " << step << ", tolerance "
                    << tolerance << ")";
    }
  }
  EXPECT_EQ(failures, 0) << what << ": elements off";
}

void ExpectTensorNear(const std::string& what, const Tensor& actual,
                      const Tensor& expected, double tolerance) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  int failures = 0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.data()[i], e = expected.data()[i];
    if (std::fabs(a - e) > tolerance * std::max(1.0, std::fabs(e)) &&
        ++failures <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: " << a << ", expected " << e;
    }
  }
  EXPECT_EQ(failures, 0) << what << ": elements off";
}

}  // namespace ringlet::nn::testing
