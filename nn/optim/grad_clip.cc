#include "nn/optim/grad_clip.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "nn/ops/elementwise.h"

namespace ringlet::nn {

double ClipCoefficient(double norm, double max_norm) {
  const double coefficient = max_norm / (norm + 1e-6);
  return coefficient < 1.0 ? coefficient : 1.0;
}

namespace {

double SquaresOf(const float* values, int64_t count) {
  double sum = 0;
  for (int64_t i = 0; i < count; ++i) {
    sum += static_cast<double>(values[i]) * values[i];
  }
  return sum;
}

}  // namespace

double GlobalNorm(const float* values, int64_t count) {
  return std::sqrt(SquaresOf(values, count));
}

double GlobalNorm(const std::vector<const Tensor*>& grads) {
  return std::sqrt(nn::SumOfSquares(grads));
}

double ClipGradNorm(const std::vector<Tensor*>& grads, double max_norm) {
  if (!(max_norm > 0)) {
    throw std::invalid_argument(
        "clip_grad_norm: max_norm must be above 0, got " +
        std::to_string(max_norm));
  }
  const double norm =
      GlobalNorm(std::vector<const Tensor*>(grads.begin(), grads.end()));
  const float scale = static_cast<float>(ClipCoefficient(norm, max_norm));
  if (scale < 1.0f) {
    for (Tensor* g : grads) ScaleInPlace(*g, scale);
  }
  return norm;
}

}  // namespace ringlet::nn
