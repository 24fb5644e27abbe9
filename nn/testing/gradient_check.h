// Test helpers for nn ops: seeded random tensors and finite-difference
// gradient checks (central differences, loss computed in double).
#ifndef RINGLET_NN_TESTING_GRADIENT_CHECK_H_
#define RINGLET_NN_TESTING_GRADIENT_CHECK_H_

#include <cstdint>
#include <functional>
#include <string>

#include "nn/tensor.h"

namespace ringlet::nn::testing {

// Uniform values in [lo, hi), from a generator seeded with `seed`.
Tensor RandomTensor(const Shape& shape, uint64_t seed, float lo = -1.0f,
                    float hi = 1.0f);

// A CPU copy of `t` with every element times (1 + u * relative), u uniform
// in [-1, 1]: rounding-sized noise, to measure how much a computation
// amplifies it (what a GPU's other order of additions may shift).
Tensor Perturbed(const Tensor& t, double relative, uint64_t seed);

// Comparisons of tensors on any device and of either type (each read back
// to the host as float32 first):
// max |a - b| (infinite for different shapes), max |t|, and max |got -
// want| / max |want| (the difference itself when want is all zeros).
double LargestDifference(const Tensor& a, const Tensor& b);
double LargestMagnitude(const Tensor& t);
double RelativeDifference(const Tensor& got, const Tensor& want);

// sum_i y[i] * r[i] in double: a scalar loss whose gradient w.r.t. y is r.
double Project(const Tensor& y, const Tensor& r);

// Checks `analytic` (d loss / d x) against central differences of `loss`,
// perturbing each element of `x` (in place, restored after) by +-step.
// An element passes when |analytic - numeric| <= tolerance x
// max(1, |analytic|, |numeric|) at `step` or, failing that, at step / 10
// (a ReLU kink inside one step spoils that estimate). Reports the first
// failures by name.
void ExpectGradientNear(const std::string& what, Tensor x,
                        const Tensor& analytic,
                        const std::function<double()>& loss, float step = 1e-2f,
                        double tolerance = 1e-2);

// |a - b| <= tolerance x max(1, |b|) for every element, with the first
// failures reported by index.
void ExpectTensorNear(const std::string& what, const Tensor& actual,
                      const Tensor& expected, double tolerance = 1e-5);

}  // namespace ringlet::nn::testing

#endif  // RINGLET_NN_TESTING_GRADIENT_CHECK_H_
