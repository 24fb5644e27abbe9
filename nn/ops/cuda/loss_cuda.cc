// Softmax cross-entropy on GPUs: the labels go up through pinned memory
// (no wait), each row's loss and correctness are computed on the device,
// and the host sums them in double as the CPU op does, when it asks
// (PendingLoss::Finish: a batch has at most a few thousand rows).
#include <string>

#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/cuda/loss_kernels.h"
#include "nn/ops/loss.h"

namespace ringlet::nn::cuda_ops {
namespace {

void QueueSoftmaxCrossEntropyCuda(const Tensor& logits, const int32_t* labels,
                                  Reduction reduction, Tensor* dlogits,
                                  Tensor* rows) {
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
  *dlogits = Tensor::Uninitialized(logits.shape(), logits.device());
  // Row losses (2 floats of storage each), then row correctness.
  *rows = Tensor::Uninitialized({3 * n}, logits.device());
  if (n == 0) return;
  const size_t label_bytes = n * sizeof(int32_t);
  Scratch device_labels(on.context, label_bytes);
  on.context.UploadAsync(device_labels.data(), labels, label_bytes);
  const float scale = reduction == Reduction::kMean ? 1.0f / n : 1.0f;
  double* row_loss = reinterpret_cast<double*>(rows->device_data());
  int32_t* row_correct =
      reinterpret_cast<int32_t*>(rows->device_data() + 2 * n);
  softmax_cross_entropy_forward(
      logits.device_data(), static_cast<const int32_t*>(device_labels.data()),
      n, k, scale, dlogits->device_data(), row_loss, row_correct, on.stream());
}

PendingLoss SoftmaxCrossEntropyKernel(const Tensor& logits,
                                      const int32_t* labels,
                                      Reduction reduction) {
  Tensor dlogits, rows;
  QueueSoftmaxCrossEntropyCuda(logits, labels, reduction, &dlogits, &rows);
  return PendingLoss::Queued(std::move(dlogits), std::move(rows),
                             reduction == Reduction::kMean);
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::softmax_cross_entropy, DeviceType::kCuda,
                        SoftmaxCrossEntropyKernel);

}  // namespace ringlet::nn::cuda_ops
