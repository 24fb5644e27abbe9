// Batch normalisation on GPUs through cuDNN's spatial batch norm (training
// with batch statistics and running averages, inference with the running
// averages, backward from the saved mean and inverse deviation). cuDNN
// updates the running variance with the unbiased variance, as PyTorch and
// the CPU path do.
//
// Synchronised batch norm (a ReplicaSum given) uses kernels of our own
// (channel_kernels.cu) with the CPU op's arithmetic: per-channel sums on
// the device, summed across replicas in device memory, then normalised
// with the whole batch's statistics. Both paths fill the same cache
// (input, mean, inv_std), so either backward reads either forward's.
//
// Both take either memory format; outputs and input gradients keep the
// input's. Our kernels read channels-last [N, C, H, W] as NCHW of N * H * W
// one-pixel images (the channels innermost).
#include "nn/ops/batch_norm.h"

#include <string>

#include "nn/ops/activation.h"
#include "nn/ops/autocast.h"
#include "nn/ops/cuda/channel_kernels.h"
#include "nn/ops/cuda/cuda_op_support.h"

namespace ringlet::nn::cuda_ops {
namespace {
namespace {

// The activations' descriptor of their type (float32, or bfloat16 under
// autocast: cuDNN's batch norm takes it with float32 parameters and
// statistics), the channels' float32.
struct Descs {
  explicit Descs(const Tensor& x) : x(x), channel(1, x.dim(1), 1, 1) {}
  TensorDesc x;
  TensorDesc channel;  // gamma, beta, means and variances.
};

// `count` doubles of device scratch, summed across the replicas: the
// kernels before it finish first, since the sum runs on another stream.
class ReplicaSums {
 public:
  ReplicaSums(OnDevice& on, int64_t count)
      : on_(on),
        scratch_(on.context, static_cast<size_t>(count) * sizeof(double)),
        count_(count) {}
  double* data() const { return static_cast<double*>(scratch_.data()); }
  void SumAcrossReplicas(const ReplicaSum& replica_sum) {
    on_.context.Synchronize();
    replica_sum(data(), count_);
  }
  // One value read back (the host needs the batch's count).
  double Read(int64_t index) const {
    double value = 0;
    RINGLET_CUDA_CHECK(cudaMemcpyAsync(&value, data() + index, sizeof(double),
                                       cudaMemcpyDeviceToHost, on_.stream()));
    on_.context.Synchronize();
    return value;
  }

 private:
  OnDevice& on_;
  Scratch scratch_;
  int64_t count_;
};

// x's images, channels and pixels per image as our kernels read them.
struct KernelShape {
  explicit KernelShape(const Tensor& x) {
    const int64_t pixels = x.dim(2) * x.dim(3);
    const bool last = x.memory_format() == MemoryFormat::kChannelsLast;
    n = last ? x.dim(0) * pixels : x.dim(0);
    c = x.dim(1);
    hw = last ? 1 : pixels;
  }
  int64_t n = 0, c = 0, hw = 0;
};

Tensor SyncTrainForward(const Tensor& x, const Tensor& gamma,
                        const Tensor& beta, BatchNormStats* stats,
                        BatchNormCache* cache, const ReplicaSum& replica_sum) {
  const auto [n, c, hw] = KernelShape(x);
  OnDevice on(x);
  ReplicaSums sums(on, c + 1);  // The count last.
  channel_sums(x.device_data(), n, c, hw, sums.data(), on.stream());
  sums.SumAcrossReplicas(replica_sum);
  const int64_t m = static_cast<int64_t>(sums.Read(c));
  if (m < 2) {
    throw ShapeError(
        "batchnorm2d: training needs more than one value per channel, got "
        "input " +
        ToString(x.shape()) + " (" + std::to_string(m) + " across replicas)");
  }
  ReplicaSums sq(on, c);
  channel_squared_deviations(x.device_data(), n, c, hw, sums.data(), sq.data(),
                             on.stream());
  sq.SumAcrossReplicas(replica_sum);
  cache->input = x;
  cache->mean = Tensor::Uninitialized({c}, x.device());
  cache->inv_std = Tensor::Uninitialized({c}, x.device());
  cache->count = m;
  cache->eps = stats->eps;
  batch_norm_statistics(sums.data(), sq.data(), c, stats->eps, stats->momentum,
                        cache->mean.device_data(), cache->inv_std.device_data(),
                        stats->running_mean.device_data(),
                        stats->running_var.device_data(), on.stream());
  Tensor y = OutputLike(x, x.dtype());
  batch_norm_normalize(x.device_data(), n, c, hw, cache->mean.device_data(),
                       cache->inv_std.device_data(), gamma.device_data(),
                       beta.device_data(), y.device_data(), on.stream());
  return y;
}

BatchNormGrads SyncBackward(const Tensor& dy, const Tensor& gamma,
                            const BatchNormCache& cache,
                            const ReplicaSum& replica_sum) {
  const auto [n, c, hw] = KernelShape(dy);
  OnDevice on(dy);
  BatchNormGrads g;
  g.dx = OutputLike(dy, dy.dtype());
  g.dgamma = Tensor::Uninitialized({c}, dy.device());
  g.dbeta = Tensor::Uninitialized({c}, dy.device());
  ReplicaSums sums(on, 2 * c);
  batch_norm_gradient_sums(
      dy.device_data(), cache.input.device_data(), n, c, hw,
      cache.mean.device_data(), cache.inv_std.device_data(), sums.data(),
      g.dgamma.device_data(), g.dbeta.device_data(), on.stream());
  sums.SumAcrossReplicas(replica_sum);
  batch_norm_input_gradient(dy.device_data(), cache.input.device_data(), n, c,
                            hw, cache.mean.device_data(),
                            cache.inv_std.device_data(), gamma.device_data(),
                            sums.data(), static_cast<double>(cache.count),
                            g.dx.device_data(), on.stream());
  return g;
}

}  // namespace

Tensor BatchNorm2dTrainForwardCuda(const Tensor& x, const Tensor& gamma,
                                   const Tensor& beta, BatchNormStats* stats,
                                   BatchNormCache* cache,
                                   const ReplicaSum& replica_sum) {
  if (replica_sum) {
    return SyncTrainForward(x, gamma, beta, stats, cache, replica_sum);
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
  Tensor y = OutputLike(x, x.dtype());
  cache->input = x;
  cache->mean = Tensor::Uninitialized({x.dim(1)}, x.device());
  cache->inv_std = Tensor::Uninitialized({x.dim(1)}, x.device());
  cache->count = m;
  cache->eps = stats->eps;
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
      on.context.cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, descs.x.get(),
      x.raw_data(), descs.x.get(), y.raw_data(), descs.channel.get(),
      gamma.device_data(), beta.device_data(), stats->momentum,
      stats->running_mean.device_data(), stats->running_var.device_data(),
      stats->eps, cache->mean.device_data(), cache->inv_std.device_data()));
  return y;
}

Tensor BatchNorm2dEvalForwardCuda(const Tensor& x, const Tensor& gamma,
                                  const Tensor& beta,
                                  const BatchNormStats& stats) {
  OnDevice on(x);
  const Descs descs(x);
  Tensor y = OutputLike(x, x.dtype());
  if (y.numel() == 0) return y;
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
      on.context.cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, descs.x.get(),
      x.raw_data(), descs.x.get(), y.raw_data(), descs.channel.get(),
      gamma.device_data(), beta.device_data(), stats.running_mean.device_data(),
      stats.running_var.device_data(), stats.eps));
  return y;
}

BatchNormGrads BatchNorm2dBackwardCuda(const Tensor& dy_any,
                                       const Tensor& gamma,
                                       const BatchNormCache& cache,
                                       const ReplicaSum& replica_sum) {
  if (!cache.input.defined()) {
    throw DeviceError(
        "batchnorm2d backward on " + ToString(dy_any.device()) +
        ": the cache is not from a training forward pass on this device");
  }
  ExpectShape("batchnorm2d backward", "output gradient", dy_any,
              cache.input.shape());
  // Read side by side with the cached input: in its order.
  const Tensor dy = InFormatOf(dy_any, cache.input);
  if (replica_sum) return SyncBackward(dy, gamma, cache, replica_sum);
  OnDevice on(dy);
  const Descs descs(dy);
  BatchNormGrads g;
  g.dx = OutputLike(dy, dy.dtype());
  g.dgamma = Tensor::Uninitialized({dy.dim(1)}, dy.device());
  g.dbeta = Tensor::Uninitialized({dy.dim(1)}, dy.device());
  const float one = 1.0f, zero = 0.0f;
  RINGLET_CUDNN_CHECK(cudnnBatchNormalizationBackward(
      on.context.cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero,
      descs.x.get(), cache.input.raw_data(), descs.x.get(), dy.raw_data(),
      descs.x.get(), g.dx.raw_data(), descs.channel.get(), gamma.device_data(),
      g.dgamma.device_data(), g.dbeta.device_data(), cache.eps,
      cache.mean.device_data(), cache.inv_std.device_data()));
  return g;
}

// In the input's type, statistics in float32 (autocast.h): synchronised
// batch norm's kernels are float32's.
Tensor TrainForwardOnGpu(const Tensor& x, const Tensor& gamma,
                         const Tensor& beta, BatchNormStats* stats,
                         BatchNormCache* cache, const ReplicaSum& replica_sum) {
  if (x.dtype() == DType::kBFloat16 && replica_sum) {
    return AsDType(TrainForwardOnGpu(AsDType(x, DType::kFloat32), gamma, beta,
                                     stats, cache, replica_sum),
                   DType::kBFloat16);
  }
  return BatchNorm2dTrainForwardCuda(x, gamma, beta, stats, cache, replica_sum);
}

BatchNormGrads BackwardOnGpu(const Tensor& dy, const Tensor& gamma,
                             const BatchNormCache& cache,
                             const ReplicaSum& replica_sum) {
  if (dy.dtype() == DType::kBFloat16 && replica_sum) {
    BatchNormGrads g =
        BackwardOnGpu(AsDType(dy, DType::kFloat32), gamma, cache, replica_sum);
    g.dx = AsDType(g.dx, DType::kBFloat16);
    return g;
  }
  return BatchNorm2dBackwardCuda(dy, gamma, cache, replica_sum);
}

// The epilogue in one pass over cuDNN's output (ApplyBatchNormEpilogue);
// the backward masks the output gradient first.
Tensor TrainForwardKernel(const Tensor& x, const Tensor& gamma,
                          const Tensor& beta, BatchNormStats* stats,
                          BatchNormCache* cache, const ReplicaSum& replica_sum,
                          const BatchNormEpilogue& epilogue) {
  return ApplyBatchNormEpilogue(
      TrainForwardOnGpu(x, gamma, beta, stats, cache, replica_sum), epilogue,
      cache);
}

Tensor EvalForwardKernel(const Tensor& x, const Tensor& gamma,
                         const Tensor& beta, const BatchNormStats& stats,
                         const BatchNormEpilogue& epilogue) {
  return ApplyBatchNormEpilogue(
      BatchNorm2dEvalForwardCuda(x, gamma, beta, stats), epilogue, nullptr);
}

BatchNormGrads BackwardKernel(const Tensor& dy, const Tensor& gamma,
                              const BatchNormCache& cache,
                              const ReplicaSum& replica_sum) {
  const Tensor g =
      cache.relu_output.defined() ? ReluBackward(cache.relu_output, dy) : dy;
  BatchNormGrads grads = BackwardOnGpu(g, gamma, cache, replica_sum);
  if (cache.added_residual) grads.d_residual = g;
  return grads;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::batch_norm2d_train_forward, DeviceType::kCuda,
                        TrainForwardKernel);
RINGLET_REGISTER_KERNEL(kernels::batch_norm2d_eval_forward, DeviceType::kCuda,
                        EvalForwardKernel);
RINGLET_REGISTER_KERNEL(kernels::batch_norm2d_backward, DeviceType::kCuda,
                        BackwardKernel);

}  // namespace ringlet::nn::cuda_ops
