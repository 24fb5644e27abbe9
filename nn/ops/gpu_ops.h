// The GPU implementations of nn's ops, called by the ops in nn/ops when
// their inputs are on a GPU (see dispatch.h); same contracts as the CPU ops
// of the same names. Work is queued on the device's stream.
//
// A GPU library registers its implementation when it is linked in
// (nn/ops/cuda, as c10's DeviceGuardImplInterface); a build without one
// registers none, and no tensor can be on a GPU there (its storage is a
// DeviceError first), so GpuOpsFor's error is only a safeguard.
#ifndef RINGLET_NN_OPS_GPU_OPS_H_
#define RINGLET_NN_OPS_GPU_OPS_H_

#include <cstdint>
#include <vector>

#include "nn/ops/batch_norm.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/linear.h"
#include "nn/ops/loss.h"
#include "nn/tensor.h"

namespace ringlet::nn {

class GpuOps {
 public:
  virtual ~GpuOps() = default;

  virtual Tensor ReluForward(const Tensor& x) = 0;
  virtual Tensor ReluBackward(const Tensor& y, const Tensor& dy) = 0;
  virtual Tensor Add(const Tensor& a, const Tensor& b) = 0;
  virtual void AddInPlace(Tensor& a, const Tensor& b) = 0;
  // y = ReLU(y + residual) in one pass (residual undefined: no add; relu
  // false: no ReLU), residual of y's type and shape: Add then ReluForward's
  // values, bit for bit. A batch norm's epilogue on its fresh output.
  virtual void AddReluInPlace(Tensor& y, const Tensor& residual, bool relu) = 0;
  virtual void AddScaledInPlace(Tensor& a, const Tensor& b, float scale) = 0;
  virtual void DivideInPlace(Tensor& x, float divisor) = 0;
  // The tensors' non-finite counts then their sum, as n + 1 unsigned ints
  // (in float storage), queued.
  virtual Tensor QueueCountNonFinite(
      const std::vector<const Tensor*>& tensors) = 0;
  virtual void ScaleInPlace(Tensor& x, float factor) = 0;
  virtual double SumOfSquares(const std::vector<const Tensor*>& tensors) = 0;
  // x, w (and dy) all float32, or all bfloat16 with a float32 bias: y and
  // dx of x's type, dw and db float32 (nn/ops/autocast.h).
  virtual Tensor Conv2dForward(const Tensor& x, const Tensor& w,
                               const Tensor& b, const Conv2dParams& params) = 0;
  virtual Conv2dGrads Conv2dBackward(const Tensor& x, const Tensor& w,
                                     bool has_bias, const Tensor& dy,
                                     const Conv2dParams& params,
                                     bool need_dx) = 0;
  virtual Tensor LinearForward(const Tensor& x, const Tensor& w,
                               const Tensor& b) = 0;
  virtual LinearGrads LinearBackward(const Tensor& x, const Tensor& w,
                                     bool has_bias, const Tensor& dy) = 0;
  virtual Tensor AvgPool2dForward(const Tensor& x, int kernel, int stride) = 0;
  virtual Tensor AvgPool2dBackward(const Shape& x_shape, const Tensor& dy,
                                   int kernel, int stride) = 0;
  virtual Tensor GlobalAvgPoolForward(const Tensor& x) = 0;
  virtual Tensor GlobalAvgPoolBackward(const Shape& x_shape,
                                       const Tensor& dy) = 0;
  virtual Tensor BatchNorm2dTrainForward(const Tensor& x, const Tensor& gamma,
                                         const Tensor& beta,
                                         BatchNormStats* stats,
                                         BatchNormCache* cache,
                                         const ReplicaSum& replica_sum) = 0;
  virtual Tensor BatchNorm2dEvalForward(const Tensor& x, const Tensor& gamma,
                                        const Tensor& beta,
                                        const BatchNormStats& stats) = 0;
  virtual BatchNormGrads BatchNorm2dBackward(const Tensor& dy,
                                             const Tensor& gamma,
                                             const BatchNormCache& cache,
                                             const ReplicaSum& replica_sum) = 0;
  // Queues the loss kernel: *dlogits, and *rows: n doubles (each row's
  // loss) then n int32s (1 where the row's prediction is right), as 3n
  // floats of storage. Labels are checked on the host first.
  virtual void QueueSoftmaxCrossEntropy(const Tensor& logits,
                                        const int32_t* labels,
                                        Reduction reduction, Tensor* dlogits,
                                        Tensor* rows) = 0;
  // SgdUpdate on every listed tensor in one launch per kMaxListedTensors;
  // `velocities` empty without momentum.
  virtual void SgdUpdateAll(const std::vector<Tensor*>& values,
                            const std::vector<const Tensor*>& grads,
                            const std::vector<Tensor*>& velocities, float lr,
                            float momentum, float weight_decay,
                            const unsigned int* skip) = 0;
  // One Adam or AdamW step (nn/optim/optimizer.h) on every listed tensor,
  // one launch per kMaxListedTensors; the step's shared factors computed by
  // the caller; nothing where `skip` (device memory, may be null) is non-zero.
  virtual void AdamUpdateAll(const std::vector<Tensor*>& values,
                             const std::vector<const Tensor*>& grads,
                             const std::vector<Tensor*>& exp_avgs,
                             const std::vector<Tensor*>& exp_avg_sqs,
                             float beta1, float beta2, float eps,
                             float step_size, float bias_correction2_sqrt,
                             float decay, float grad_decay,
                             const unsigned int* skip) = 0;
  // Every listed tensor set to 0, one launch per kMaxListedTensors.
  virtual void ZeroAll(const std::vector<Tensor*>& tensors) = 0;
  // value -= lr * (grad + wd * value), or with momentum through velocity;
  // nothing where `skip` (device memory, may be null) is non-zero.
  virtual void SgdUpdate(Tensor& value, const Tensor& grad, Tensor* velocity,
                         float lr, float momentum, float weight_decay,
                         const unsigned int* skip) = 0;
};

// The registered implementation for `device`'s ops; a DeviceError naming
// the device when the build has none.
GpuOps& GpuOpsFor(Device device);
// Called once, by a GPU library's static initialiser; `ops` must outlive
// the program.
void RegisterGpuOps(GpuOps* ops);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_GPU_OPS_H_
