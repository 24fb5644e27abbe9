// Softmax cross-entropy on GPUs: the labels go up through pinned memory
// (no wait), each row's loss and correctness are computed on the device,
// and the host sums them in double as the CPU op does, when it asks
// (PendingLoss::Finish: a batch has at most a few thousand rows).
#include <string>

#include "nn/ops/cuda/cuda_op_support.h"
#include "nn/ops/loss.h"

namespace ringlet::nn::cuda_ops {
namespace {

__global__ void softmax_cross_entropy_forward_kernel(
    const float* logits, const int32_t* labels, int64_t n, int64_t k,
    float scale, float* dlogits, double* row_loss, int32_t* row_correct) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const float* row = logits + i * k;
    float* grad = dlogits + i * k;
    const int32_t label = labels[i];
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j) best = row[j] > row[best] ? j : best;
    row_correct[i] = best == label ? 1 : 0;
    const float max = row[best];
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += expf(row[j] - max);
    const double log_sum = log(sum);
    row_loss[i] = log_sum - (row[label] - max);
    for (int64_t j = 0; j < k; ++j) {
      const double p = exp(row[j] - max - log_sum);
      grad[j] = static_cast<float>(p - (j == label ? 1.0 : 0.0)) * scale;
    }
  }
}

// One row of logits [n, k] per thread, as the CPU op computes it: row_loss
// = log sum exp(z - max) - (z[label] - max), dlogits = (softmax - onehot) *
// scale, row_correct = 1 when the first largest logit is the label's.
void softmax_cross_entropy_forward(const float* logits, const int32_t* labels,
                                   int64_t n, int64_t k, float scale,
                                   float* dlogits, double* row_loss,
                                   int32_t* row_correct, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = 128;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  softmax_cross_entropy_forward_kernel<<<
      static_cast<int>(blocks < 4096 ? blocks : 4096), kThreads, 0, stream>>>(
      logits, labels, n, k, scale, dlogits, row_loss, row_correct);
  RINGLET_CUDA_CHECK_LAUNCH();
}

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
