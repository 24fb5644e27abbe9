#include "nn/ops/batch_norm.h"

#include <stdexcept>

#include "nn/ops/activation.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/elementwise.h"

namespace ringlet::nn {
namespace {

// A CPU op's device for activations of either type and float32
// parameters and statistics.
Device ActivationAndParams(const char* op, const Tensor& activation,
                           const Tensor& other_activation,
                           std::initializer_list<const Tensor*> params) {
  return CommonDevice(op,
                      {OpDeviceOfAnyType(op, {&activation, &other_activation}),
                       OpDevice(op, params)});
}

void CheckParams(const char* op, const Tensor& x, const Tensor& gamma,
                 const Tensor& beta, const BatchNormEpilogue& epilogue) {
  ExpectShape(op, "input", x, {-1, -1, -1, -1});
  ExpectShape(op, "gamma", gamma, {x.dim(1)});
  ExpectShape(op, "beta", beta, {x.dim(1)});
  if (epilogue.residual.defined()) {
    ExpectShape(op, "residual", epilogue.residual, x.shape());
  }
}

}  // namespace

Tensor ApplyBatchNormEpilogue(Tensor y, const BatchNormEpilogue& epilogue,
                              BatchNormCache* cache) {
  const Tensor& residual = epilogue.residual;
  if (!residual.defined() || residual.dtype() == y.dtype()) {
    if (residual.defined() || epilogue.relu) {
      AddReluInPlace(y, residual, epilogue.relu);
    }
  } else {
    y = Add(y, residual);
    if (epilogue.relu) y = ReluForward(y);
  }
  if (cache != nullptr) {
    cache->relu_output = epilogue.relu ? y : Tensor();
    cache->added_residual = residual.defined();
  }
  return y;
}

Tensor BatchNorm2dTrainForward(const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, BatchNormStats* stats,
                               BatchNormCache* cache,
                               const ReplicaSum& replica_sum,
                               const BatchNormEpilogue& epilogue) {
  CheckParams("batchnorm2d", x, gamma, beta, epilogue);
  const Device device = ActivationAndParams(
      "batchnorm2d", x, epilogue.residual,
      {&gamma, &beta, &stats->running_mean, &stats->running_var});
  return kernels::batch_norm2d_train_forward.For(device)(
      x, gamma, beta, stats, cache, replica_sum, epilogue);
}

Tensor BatchNorm2dEvalForward(const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const BatchNormStats& stats,
                              const BatchNormEpilogue& epilogue) {
  CheckParams("batchnorm2d", x, gamma, beta, epilogue);
  const Device device = ActivationAndParams(
      "batchnorm2d", x, epilogue.residual,
      {&gamma, &beta, &stats.running_mean, &stats.running_var});
  return kernels::batch_norm2d_eval_forward.For(device)(x, gamma, beta, stats,
                                                        epilogue);
}

BatchNormGrads BatchNorm2dBackward(const Tensor& dy, const Tensor& gamma,
                                   const BatchNormCache& cache,
                                   const ReplicaSum& replica_sum) {
  if (!cache.filled()) {
    throw std::invalid_argument(
        "batchnorm2d backward: the cache is empty; run a training-mode "
        "forward pass first");
  }
  // dx and the residual's gradient in the type of the output gradient,
  // dgamma and dbeta in float32.
  const Device device =
      ActivationAndParams("batchnorm2d backward", dy, cache.input, {&gamma});
  ExpectShape("batchnorm2d backward", "output gradient", dy,
              cache.input.shape());
  return kernels::batch_norm2d_backward.For(device)(dy, gamma, cache,
                                                    replica_sum);
}

}  // namespace ringlet::nn
