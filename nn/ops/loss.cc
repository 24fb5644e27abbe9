#include "nn/ops/loss.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"

namespace ringlet::nn {
namespace {

// With label smoothing s the target is (1 - s) on the label and s / k on
// every class; s = 0 takes the plain loss's arithmetic exactly.
LossResult CpuSoftmaxCrossEntropy(const Tensor& logits, const int32_t* labels,
                                  Reduction reduction, double s = 0) {
  const int64_t n = logits.dim(0), k = logits.dim(1);
  LossResult result;
  result.dlogits = Tensor::Uninitialized(logits.shape());
  const float scale = reduction == Reduction::kMean && n > 0 ? 1.0f / n : 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t label = labels[i];
    if (label < 0 || label >= k) {
      throw ShapeError("softmax_cross_entropy: label " + std::to_string(label) +
                       " of row " + std::to_string(i) + " is outside [0, " +
                       std::to_string(k) + ")");
    }
    const float* row = logits.data() + i * k;
    float* grad = result.dlogits.data() + i * k;
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j) best = row[j] > row[best] ? j : best;
    result.correct += best == label;
    // Shift by the max so exp never overflows.
    const float max = row[best];
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(row[j] - max);
    const double log_sum = std::log(sum);
    result.loss += log_sum - (row[label] - max);
    if (s != 0) {
      // (1 - s) of the label's term plus s of the mean over the classes.
      double mean = 0;
      for (int64_t j = 0; j < k; ++j) mean += log_sum - (row[j] - max);
      result.loss += s * (mean / k - (log_sum - (row[label] - max)));
    }
    for (int64_t j = 0; j < k; ++j) {
      const double p = std::exp(row[j] - max - log_sum);
      const double target =
          s != 0 ? (j == label ? 1 - s : 0) + s / k : (j == label ? 1.0 : 0.0);
      grad[j] = static_cast<float>(p - target) * scale;
    }
  }
  if (reduction == Reduction::kMean && n > 0) result.loss /= n;
  return result;
}

// The output as float32 on the host (a GPU's copied over, bfloat16
// widened), and where the gradient goes back.
Tensor HostFloat(const Tensor& t) {
  Tensor f = t.dtype() == DType::kBFloat16 ? AsDType(t, DType::kFloat32) : t;
  return f.device().is_cpu() ? f : f.To(Device::Cpu());
}

// dlogits on the output's device (float32, as autocast's losses give it).
Tensor OnDeviceOf(const Tensor& output, Tensor host) {
  return output.device().is_cpu() ? host : host.To(output.device());
}

// n samples of m elements each: the batch's reduction of per-sample means.
double Reduce(double sum_of_sample_means, int64_t n, Reduction reduction) {
  return reduction == Reduction::kMean && n > 0 ? sum_of_sample_means / n
                                                : sum_of_sample_means;
}

void CheckTargets(const char* who, const Tensor& output, const float* targets) {
  if (output.shape().empty()) {
    throw ShapeError(std::string(who) + ": the output needs a batch dimension");
  }
  if (output.numel() > 0 && targets == nullptr) {
    throw ShapeError(std::string(who) + ": no targets");
  }
}

}  // namespace

LossResult SoftmaxCrossEntropy(const Tensor& logits, const int32_t* labels,
                               Reduction reduction, float label_smoothing) {
  if (label_smoothing == 0) {
    return SoftmaxCrossEntropy(logits, labels, reduction);
  }
  if (!(label_smoothing > 0 && label_smoothing < 1)) {
    throw ShapeError("softmax_cross_entropy: label smoothing " +
                     std::to_string(label_smoothing) + " is outside [0, 1)");
  }
  ExpectShape("softmax_cross_entropy", "logits", logits, {-1, -1});
  LossResult r = CpuSoftmaxCrossEntropy(HostFloat(logits), labels, reduction,
                                        label_smoothing);
  r.dlogits = OnDeviceOf(logits, std::move(r.dlogits));
  return r;
}

namespace {

// A loss of each output element against its target, on the host: `element`
// gives (loss, d loss / d output) of one (output, target) pair; a sample's
// loss is the mean over its elements; a sample counts as correct when
// `right` holds for all its elements (counted only when `counts`).
template <typename Element, typename Right>
LossResult ElementwiseLoss(const char* who, const Tensor& output,
                           const float* targets, Reduction reduction,
                           const Element& element, bool counts,
                           const Right& right) {
  CheckTargets(who, output, targets);
  const Tensor y = HostFloat(output);
  const int64_t n = y.dim(0), m = n > 0 ? y.numel() / n : 0;
  LossResult r;
  r.dlogits = Tensor::Uninitialized(y.shape());
  const double scale =
      (reduction == Reduction::kMean && n > 0 ? 1.0 / n : 1.0) /
      std::max<int64_t>(m, 1);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double sample = 0;
    bool all_right = true;
    for (int64_t j = 0; j < m; ++j) {
      const int64_t e = i * m + j;
      const double v = y.data()[e], t = targets[e];
      const auto [loss, grad] = element(v, t, e);
      sample += loss;
      r.dlogits.data()[e] = static_cast<float>(grad * scale);
      all_right = all_right && right(v, t);
    }
    sum += sample / std::max<int64_t>(m, 1);
    r.correct += counts && all_right;
  }
  r.loss = Reduce(sum, n, reduction);
  r.dlogits = OnDeviceOf(output, std::move(r.dlogits));
  return r;
}

}  // namespace

LossResult MeanSquaredError(const Tensor& output, const float* targets,
                            Reduction reduction) {
  return ElementwiseLoss(
      "mean_squared_error", output, targets, reduction,
      [](double v, double t, int64_t) {
        return std::pair<double, double>((v - t) * (v - t), 2 * (v - t));
      },
      /*counts=*/false, [](double, double) { return false; });
}

LossResult BinaryCrossEntropyWithLogits(const Tensor& logits,
                                        const float* targets,
                                        Reduction reduction) {
  return ElementwiseLoss(
      "binary_cross_entropy_with_logits", logits, targets, reduction,
      [](double v, double t, int64_t e) {
        if (!(t >= 0 && t <= 1)) {
          throw ShapeError("binary_cross_entropy_with_logits: target " +
                           std::to_string(e) + " is " + std::to_string(t) +
                           ", outside [0, 1]");
        }
        // max(v, 0) - v t + log(1 + exp(-|v|)): no overflow for any v.
        const double loss =
            std::max(v, 0.0) - v * t + std::log1p(std::exp(-std::abs(v)));
        return std::pair<double, double>(loss, 1 / (1 + std::exp(-v)) - t);
      },
      /*counts=*/true, [](double v, double t) { return (v > 0) == (t > 0.5); });
}

LossResult SoftmaxCrossEntropy(const Tensor& logits, const int32_t* labels,
                               Reduction reduction) {
  return StartSoftmaxCrossEntropy(logits, labels, reduction).Finish();
}

PendingLoss StartSoftmaxCrossEntropy(const Tensor& logits,
                                     const int32_t* labels,
                                     Reduction reduction) {
  ExpectShape("softmax_cross_entropy", "logits", logits, {-1, -1});
  if (logits.dtype() == DType::kBFloat16) {
    // In float32, the gradient too (autocast.h).
    return StartSoftmaxCrossEntropy(AsDType(logits, DType::kFloat32), labels,
                                    reduction);
  }
  return kernels::softmax_cross_entropy.For(
      OpDevice("softmax_cross_entropy", {&logits}))(logits, labels, reduction);
}

PendingLoss PendingLoss::Ready(LossResult result) {
  PendingLoss ready;
  ready.result_ = std::move(result);
  return ready;
}

PendingLoss PendingLoss::Queued(Tensor dlogits, Tensor row_results, bool mean) {
  PendingLoss queued;
  queued.rows_ = dlogits.dim(0);
  queued.result_.dlogits = std::move(dlogits);
  queued.row_results_ = std::move(row_results);
  queued.mean_ = mean;
  queued.pending_ = true;
  return queued;
}

LossResult PendingLoss::Finish() {
  if (!pending_) return result_;
  pending_ = false;
  const int64_t n = rows_;
  if (n == 0) return result_;
  // One copy back (the host's one wait): losses as doubles, then counts.
  std::vector<float> host(3 * n);
  CopyToHost(row_results_, host.data());
  std::vector<double> losses(n);
  std::vector<int32_t> correct(n);
  std::memcpy(losses.data(), host.data(), n * sizeof(double));
  std::memcpy(correct.data(), host.data() + 2 * n, n * sizeof(int32_t));
  for (int64_t i = 0; i < n; ++i) {
    result_.loss += losses[i];
    result_.correct += correct[i];
  }
  if (mean_) result_.loss /= n;
  row_results_ = Tensor();
  return result_;
}

namespace {

// The CPU's kernel is the host arithmetic the host-computed losses share.
PendingLoss SoftmaxCrossEntropyCpu(const Tensor& logits, const int32_t* labels,
                                   Reduction reduction) {
  return PendingLoss::Ready(CpuSoftmaxCrossEntropy(logits, labels, reduction));
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::softmax_cross_entropy, DeviceType::kCpu,
                        SoftmaxCrossEntropyCpu);

}  // namespace ringlet::nn
