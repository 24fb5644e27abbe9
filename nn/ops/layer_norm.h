// Layer normalisation over the last dimension (torch.nn.LayerNorm with one
// normalised dimension): each row of D values is normalised by its own
// mean and biased variance, then scaled by gamma and shifted by beta [D].
// x float32 or bfloat16 (the output in its type, computed in float32 with
// row sums in double, rounded once); gamma, beta and the statistics
// float32.
#ifndef RINGLET_NN_OPS_LAYER_NORM_H_
#define RINGLET_NN_OPS_LAYER_NORM_H_

#include <stdexcept>
#include <string>

#include "nn/ops/dispatch.h"
#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// What the backward needs: the input, and each row's mean and 1 / std.
struct LayerNormCache {
  Tensor input;  // [..., D]
  Tensor mean;   // [rows]
  Tensor rstd;   // [rows]
  bool filled() const { return input.defined(); }
};

struct LayerNormGrads {
  Tensor dx;             // dy's type
  Tensor dgamma, dbeta;  // float32 [D]
};

// Implementations per device type (kernel_table.h), given checked shapes
// on one device; `cache` may be null (evaluation).
namespace kernels {
inline KernelTable<Tensor(const Tensor& x, const Tensor& gamma,
                          const Tensor& beta, float eps, LayerNormCache* cache)>
    layer_norm_forward{"layer_norm"};
inline KernelTable<LayerNormGrads(const Tensor& dy, const Tensor& gamma,
                                  const LayerNormCache& cache)>
    layer_norm_backward{"layer_norm backward"};
}  // namespace kernels

// x [..., D] with D = gamma's size; eps > 0. Fills `cache` when given.
inline Tensor LayerNormForward(const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, float eps,
                               LayerNormCache* cache) {
  ExpectShape("layer_norm", "gamma", gamma, {-1});
  ExpectShape("layer_norm", "beta", beta, gamma.shape());
  if (x.rank() < 1 || x.dim(x.rank() - 1) != gamma.dim(0)) {
    throw ShapeError("layer_norm: input " + ToString(x.shape()) +
                     " does not end in the normalised size " +
                     std::to_string(gamma.dim(0)));
  }
  if (!(eps > 0.0f)) throw ShapeError("layer_norm: eps must be above 0");
  const Device device =
      CommonDevice("layer_norm", {OpDeviceOfAnyType("layer_norm", {&x}),
                                  OpDevice("layer_norm", {&gamma, &beta})});
  return kernels::layer_norm_forward.For(device)(x, gamma, beta, eps, cache);
}

inline LayerNormGrads LayerNormBackward(const Tensor& dy, const Tensor& gamma,
                                        const LayerNormCache& cache) {
  if (!cache.filled()) {
    throw std::invalid_argument(
        "layer_norm backward: the cache is empty; run a training-mode "
        "forward pass first");
  }
  ExpectShape("layer_norm backward", "output gradient", dy,
              cache.input.shape());
  const Device device = CommonDevice(
      "layer_norm backward",
      {OpDeviceOfAnyType("layer_norm backward", {&dy, &cache.input}),
       OpDevice("layer_norm backward", {&gamma})});
  return kernels::layer_norm_backward.For(device)(dy, gamma, cache);
}

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_LAYER_NORM_H_
