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

Tensor Perturbed(const Tensor& t, double relative, uint64_t seed) {
  const Tensor u = RandomTensor(t.shape(), seed, -1.0f, 1.0f);
  Tensor out = t.To(Device::Cpu()).Clone();
  for (int64_t i = 0; i < out.numel(); ++i) {
    out.data()[i] =
        static_cast<float>(out.data()[i] * (1.0 + relative * u.data()[i]));
  }
  return out;
}

double LargestDifference(const Tensor& a, const Tensor& b) {
  // Compared in NCHW order whatever either's memory format.
  const auto host = [](const Tensor& t) {
    return t.ToMemoryFormat(MemoryFormat::kContiguous)
        .To(Device::Cpu())
        .To(DType::kFloat32);
  };
  const Tensor ha = host(a), hb = host(b);
  if (ha.shape() != hb.shape()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < ha.numel(); ++i) {
    worst =
        std::max(worst, std::abs(double{ha.data()[i]} - double{hb.data()[i]}));
  }
  return worst;
}

double LargestMagnitude(const Tensor& t) {
  const Tensor host = t.To(Device::Cpu()).To(DType::kFloat32);
  double largest = 0;
  for (int64_t i = 0; i < host.numel(); ++i) {
    largest = std::max(largest, std::abs(double{host.data()[i]}));
  }
  return largest;
}

double RelativeDifference(const Tensor& got, const Tensor& want) {
  const double worst = LargestDifference(got, want);
  const double largest = LargestMagnitude(want);
  return largest > 0 ? worst / largest : worst;
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
  // Central difference at element i with step h.
  const auto numeric_at = [&](int64_t i, float h) {
    const float saved = x.data()[i];
    x.data()[i] = saved + h;
    const double plus = loss();
    x.data()[i] = saved - h;
    const double minus = loss();
    x.data()[i] = saved;
    return (plus - minus) / (2.0 * h);
  };
  const auto close = [&](double a, double n) {
    return std::fabs(a - n) <=
           tolerance * std::max({1.0, std::fabs(a), std::fabs(n)});
  };
  int failures = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double a = analytic.data()[i];
    const double numeric = numeric_at(i, step);
    // A ReLU kink inside +-step spoils that estimate; one a tenth as wide
    // rarely meets the same kink, so the element gets a second chance.
    if (close(a, numeric) || close(a, numeric_at(i, step / 10))) continue;
    if (++failures <= 5) {
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
