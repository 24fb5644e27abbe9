// nn's ops on CUDA devices (nn/ops/gpu_ops.h), registered when this
// library is linked in (cuda_ops.cc).
//
// cuDNN: convolution, batch norm, pooling, ReLU; cuBLAS: linear; nn's own
// kernels: add, bias add, softmax cross-entropy, the optimizers' updates.
// Shapes are checked by the callers in nn/ops before they dispatch here.
#ifndef RINGLET_NN_OPS_CUDA_CUDA_OPS_H_
#define RINGLET_NN_OPS_CUDA_CUDA_OPS_H_

#include <cstdint>
#include <vector>

#include "nn/ops/gpu_ops.h"

namespace ringlet::nn::cuda_ops {

class CudaOps final : public GpuOps {
 public:
  Tensor ReluForward(const Tensor& x) override;
  Tensor ReluBackward(const Tensor& y, const Tensor& dy) override;
  Tensor Add(const Tensor& a, const Tensor& b) override;
  void AddInPlace(Tensor& a, const Tensor& b) override;
  void AddReluInPlace(Tensor& y, const Tensor& residual, bool relu) override;
  void AddScaledInPlace(Tensor& a, const Tensor& b, float scale) override;
  void DivideInPlace(Tensor& x, float divisor) override;
  Tensor QueueCountNonFinite(
      const std::vector<const Tensor*>& tensors) override;
  void ScaleInPlace(Tensor& x, float factor) override;
  double SumOfSquares(const std::vector<const Tensor*>& tensors) override;
  Tensor Conv2dForward(const Tensor& x, const Tensor& w, const Tensor& b,
                       const Conv2dParams& params) override;
  Conv2dGrads Conv2dBackward(const Tensor& x, const Tensor& w, bool has_bias,
                             const Tensor& dy, const Conv2dParams& params,
                             bool need_dx) override;
  Tensor LinearForward(const Tensor& x, const Tensor& w,
                       const Tensor& b) override;
  LinearGrads LinearBackward(const Tensor& x, const Tensor& w, bool has_bias,
                             const Tensor& dy) override;
  Tensor AvgPool2dForward(const Tensor& x, int kernel, int stride) override;
  Tensor AvgPool2dBackward(const Shape& x_shape, const Tensor& dy, int kernel,
                           int stride) override;
  Tensor GlobalAvgPoolForward(const Tensor& x) override;
  Tensor GlobalAvgPoolBackward(const Shape& x_shape, const Tensor& dy) override;
  Tensor BatchNorm2dTrainForward(const Tensor& x, const Tensor& gamma,
                                 const Tensor& beta, BatchNormStats* stats,
                                 BatchNormCache* cache,
                                 const ReplicaSum& replica_sum) override;
  Tensor BatchNorm2dEvalForward(const Tensor& x, const Tensor& gamma,
                                const Tensor& beta,
                                const BatchNormStats& stats) override;
  BatchNormGrads BatchNorm2dBackward(const Tensor& dy, const Tensor& gamma,
                                     const BatchNormCache& cache,
                                     const ReplicaSum& replica_sum) override;
  void QueueSoftmaxCrossEntropy(const Tensor& logits, const int32_t* labels,
                                Reduction reduction, Tensor* dlogits,
                                Tensor* rows) override;
  void SgdUpdateAll(const std::vector<Tensor*>& values,
                    const std::vector<const Tensor*>& grads,
                    const std::vector<Tensor*>& velocities, float lr,
                    float momentum, float weight_decay,
                    const unsigned int* skip) override;
  void AdamUpdateAll(const std::vector<Tensor*>& values,
                     const std::vector<const Tensor*>& grads,
                     const std::vector<Tensor*>& exp_avgs,
                     const std::vector<Tensor*>& exp_avg_sqs, float beta1,
                     float beta2, float eps, float step_size,
                     float bias_correction2_sqrt, float decay, float grad_decay,
                     const unsigned int* skip) override;
  void ZeroAll(const std::vector<Tensor*>& tensors) override;
  void SgdUpdate(Tensor& value, const Tensor& grad, Tensor* velocity, float lr,
                 float momentum, float weight_decay,
                 const unsigned int* skip) override;
};

}  // namespace ringlet::nn::cuda_ops

#endif  // RINGLET_NN_OPS_CUDA_CUDA_OPS_H_
