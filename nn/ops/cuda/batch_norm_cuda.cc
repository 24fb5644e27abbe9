// Batch normalisation on GPUs through cuDNN's spatial batch norm (training
// with batch statistics and running averages, inference with the running
// averages, backward from the saved mean and inverse deviation). cuDNN
// updates the running variance with the unbiased variance, as PyTorch and
// the CPU path do. Synchronised batch norm across GPUs is not written yet.
#include <string>

#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/cuda/cuda_ops.h"

namespace ringlet::nn::cuda_ops {
namespace {

struct Descs {
  explicit Descs(const Tensor& x)
      : x(x.dim(0), x.dim(1), x.dim(2), x.dim(3)), channel(1, x.dim(1), 1, 1) {}
  TensorDesc x;
  TensorDesc channel;  // gamma, beta, means and variances.
};

}  // namespace

Tensor BatchNorm2dTrainForward(const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, BatchNormStats* stats,
                               BatchNormCache* cache,
                               const ReplicaSum& replica_sum) {
  if (replica_sum) {
    throw DeviceError(
        "batchnorm2d on " + ToString(x.device()) +
        ": synchronised batch norm is not written for GPUs yet; train "
        "without --sync_bn");
  }
  const int64_t m = x.dim(0) * x.dim(2) * x.dim(3);
  if (m < 2) {
    throw ShapeError(
        "batchnorm2d: training needs more than one value per channel, got "
        "input " +
        ToString(x.shape()));
  }
  OnDevice on(x);
  const Descs descs(x);
  Tensor y = Tensor::Uninitialized(x.shape(), x.device());
  cache->input = x;
  cache->mean = Tensor::Uninitialized({x.dim(1)}, x.device());
  cache->inv_std = Tensor::Uninitialized({x.dim(1)}, x.device());
  cache->count = m;
  cache->eps = stats->eps;
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
      on.context.cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, descs.x.get(),
      x.device_data(), descs.x.get(), y.device_data(), descs.channel.get(),
      gamma.device_data(), beta.device_data(), stats->momentum,
      stats->running_mean.device_data(), stats->running_var.device_data(),
      stats->eps, cache->mean.device_data(), cache->inv_std.device_data()));
  return y;
}

Tensor BatchNorm2dEvalForward(const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const BatchNormStats& stats) {
  OnDevice on(x);
  const Descs descs(x);
  Tensor y = Tensor::Uninitialized(x.shape(), x.device());
  if (y.numel() == 0) return y;
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
      on.context.cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, descs.x.get(),
      x.device_data(), descs.x.get(), y.device_data(), descs.channel.get(),
      gamma.device_data(), beta.device_data(), stats.running_mean.device_data(),
      stats.running_var.device_data(), stats.eps));
  return y;
}

BatchNormGrads BatchNorm2dBackward(const Tensor& dy, const Tensor& gamma,
                                   const BatchNormCache& cache,
                                   const ReplicaSum& replica_sum) {
  if (replica_sum) {
    throw DeviceError("batchnorm2d backward on " + ToString(dy.device()) +
                      ": synchronised batch norm is not written for GPUs yet");
  }
  if (!cache.input.defined()) {
    throw DeviceError(
        "batchnorm2d backward on " + ToString(dy.device()) +
        ": the cache is not from a training forward pass on this device");
  }
  ExpectShape("batchnorm2d backward", "output gradient", dy,
              cache.input.shape());
  OnDevice on(dy);
  const Descs descs(dy);
  BatchNormGrads g;
  g.dx = Tensor::Uninitialized(dy.shape(), dy.device());
  g.dgamma = Tensor::Uninitialized({dy.dim(1)}, dy.device());
  g.dbeta = Tensor::Uninitialized({dy.dim(1)}, dy.device());
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnBatchNormalizationBackward(
      on.context.cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero,
      descs.x.get(), cache.input.device_data(), descs.x.get(), dy.device_data(),
      descs.x.get(), g.dx.device_data(), descs.channel.get(),
      gamma.device_data(), g.dgamma.device_data(), g.dbeta.device_data(),
      cache.eps, cache.mean.device_data(), cache.inv_std.device_data()));
  return g;
}

}  // namespace ringlet::nn::cuda_ops
