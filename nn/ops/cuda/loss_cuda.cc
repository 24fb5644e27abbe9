// Softmax cross-entropy on GPUs: the labels go up, each row's loss and
// correctness come back, and the host sums them in double as the CPU op
// does (a batch has at most a few thousand rows).
#include <vector>

#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/cuda/cuda_ops.h"
#include "nn/ops/cuda/loss_kernels.h"

namespace ringlet::nn::cuda_ops {

LossResult SoftmaxCrossEntropy(const Tensor& logits, const int32_t* labels,
                               Reduction reduction) {
  const int64_t n = logits.dim(0), k = logits.dim(1);
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= k) {
      throw ShapeError("softmax_cross_entropy: label " +
                       std::to_string(labels[i]) + " of row " +
                       std::to_string(i) + " is outside [0, " +
                       std::to_string(k) + ")");
    }
  }
  OnDevice on(logits);
  LossResult result;
  result.dlogits = Tensor::Uninitialized(logits.shape(), logits.device());
  if (n == 0) return result;
  const size_t label_bytes = n * sizeof(int32_t);
  const size_t loss_bytes = n * sizeof(double);
  Scratch device_labels(on.context, label_bytes);
  Scratch row_loss(on.context, loss_bytes);
  Scratch row_correct(on.context, label_bytes);
  RINGLET_CUDA_CHECK(cudaMemcpyAsync(device_labels.data(), labels, label_bytes,
                                     cudaMemcpyHostToDevice, on.stream()));
  const float scale = reduction == Reduction::kMean ? 1.0f / n : 1.0f;
  softmax_cross_entropy_forward(
      logits.device_data(), static_cast<const int32_t*>(device_labels.data()),
      n, k, scale, result.dlogits.device_data(),
      static_cast<double*>(row_loss.data()),
      static_cast<int32_t*>(row_correct.data()), on.stream());
  std::vector<double> losses(n);
  std::vector<int32_t> correct(n);
  RINGLET_CUDA_CHECK(cudaMemcpyAsync(losses.data(), row_loss.data(), loss_bytes,
                                     cudaMemcpyDeviceToHost, on.stream()));
  RINGLET_CUDA_CHECK(cudaMemcpyAsync(correct.data(), row_correct.data(),
                                     label_bytes, cudaMemcpyDeviceToHost,
                                     on.stream()));
  on.context.Synchronize();
  for (int64_t i = 0; i < n; ++i) {
    result.loss += losses[i];
    result.correct += correct[i];
  }
  if (reduction == Reduction::kMean) result.loss /= n;
  return result;
}

}  // namespace ringlet::nn::cuda_ops
