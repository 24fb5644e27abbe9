// The contract suite of nn's ops on GPUs: every op's forward and backward
// on a GPU against the same op on the CPU, through the public functions (so
// the dispatch is exercised too), on random inputs: exactly for the
// elementwise ops, within 1e-4 relative to the largest value for cuDNN and
// cuBLAS, which sum in other orders. Skipped with the reason without a GPU.
#include "nn/ops/cuda/cuda_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gpu/device_probe.h"
#include "nn/ops/activation.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/linear.h"
#include "nn/ops/loss.h"
#include "nn/ops/pooling.h"
#include "nn/optim/sgd.h"

namespace ringlet::nn {
namespace {

using ::testing::HasSubstr;

class CudaOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
    if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
    gpu_ = Device::Cuda(report.usable[0]);
  }
  static Tensor Random(const Shape& shape, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(NumElements(shape));
    for (float& x : v) x = dist(gen);
    return Tensor::FromVector(shape, v);
  }
  static std::vector<float> Values(const Tensor& t) {
    const Tensor host = t.To(Device::Cpu());
    return std::vector<float>(host.data(), host.data() + host.numel());
  }
  Device gpu_;
};

TEST_F(CudaOpsTest, ReluAndAddMatchTheCpu) {
  const Tensor x = Random({3, 4, 5, 7}, 1), dy = Random({3, 4, 5, 7}, 2);
  const Tensor y = ReluForward(x);
  const Tensor y_gpu = ReluForward(x.To(gpu_));
  EXPECT_EQ(y_gpu.device(), gpu_);
  EXPECT_EQ(Values(y_gpu), Values(y));
  EXPECT_EQ(Values(ReluBackward(y_gpu, dy.To(gpu_))),
            Values(ReluBackward(y, dy)));
  EXPECT_EQ(Values(Add(x.To(gpu_), dy.To(gpu_))), Values(Add(x, dy)));
  Tensor sum = x.To(gpu_);
  AddInPlace(sum, dy.To(gpu_));
  EXPECT_EQ(Values(sum), Values(Add(x, dy)));
}

TEST_F(CudaOpsTest, SgdStepMatchesTheCpu) {
  for (float momentum : {0.0f, 0.9f}) {
    SgdOptions options;
    options.lr = 0.05f;
    options.momentum = momentum;
    options.weight_decay = 1e-4f;
    Tensor p = Random({257}, 3), v = Random({257}, 4);
    const Tensor g = Random({257}, 5);
    Tensor p_gpu = p.To(gpu_), v_gpu = v.To(gpu_);
    SgdUpdate(p, g, &v, options);
    SgdUpdate(p_gpu, g.To(gpu_), &v_gpu, options);
    EXPECT_EQ(Values(p_gpu), Values(p)) << "momentum " << momentum;
  }
}

// Largest |a - b| over the values, against a tolerance relative to the
// largest |a|: cuDNN and cuBLAS sum in other orders than the CPU path.
void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what, float tolerance = 1e-4f) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float largest = 0, worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    largest = std::max(largest, std::abs(want[i]));
    worst = std::max(worst, std::abs(got[i] - want[i]));
  }
  EXPECT_LE(worst, tolerance * (1 + largest)) << what;
}

TEST_F(CudaOpsTest, Conv2dMatchesTheCpuWithStrideAndPadding) {
  for (const Conv2dParams params : {Conv2dParams{1, 1}, Conv2dParams{2, 0}}) {
    const Tensor x = Random({3, 4, 9, 9}, 10), w = Random({5, 4, 3, 3}, 11),
                 b = Random({5}, 12);
    const Tensor y = Conv2dForward(x, w, b, params);
    const Tensor y_gpu =
        Conv2dForward(x.To(gpu_), w.To(gpu_), b.To(gpu_), params);
    ExpectClose(Values(y_gpu), Values(y), "conv2d forward");
    const Tensor dy = Random(y.shape(), 13);
    const Conv2dGrads g = Conv2dBackward(x, w, true, dy, params);
    const Conv2dGrads g_gpu =
        Conv2dBackward(x.To(gpu_), w.To(gpu_), true, dy.To(gpu_), params);
    ExpectClose(Values(g_gpu.dx), Values(g.dx), "conv2d dx");
    ExpectClose(Values(g_gpu.dw), Values(g.dw), "conv2d dw");
    ExpectClose(Values(g_gpu.db), Values(g.db), "conv2d db");
  }
}

TEST_F(CudaOpsTest, LinearMatchesTheCpu) {
  const Tensor x = Random({7, 800}, 20), w = Random({800, 128}, 21),
               b = Random({128}, 22), dy = Random({7, 128}, 23);
  ExpectClose(Values(LinearForward(x.To(gpu_), w.To(gpu_), b.To(gpu_))),
              Values(LinearForward(x, w, b)), "linear forward");
  const LinearGrads g = LinearBackward(x, w, true, dy);
  const LinearGrads g_gpu =
      LinearBackward(x.To(gpu_), w.To(gpu_), true, dy.To(gpu_));
  ExpectClose(Values(g_gpu.dx), Values(g.dx), "linear dx");
  ExpectClose(Values(g_gpu.dw), Values(g.dw), "linear dw");
  ExpectClose(Values(g_gpu.db), Values(g.db), "linear db");
}

TEST_F(CudaOpsTest, PoolingMatchesTheCpu) {
  const Tensor x = Random({2, 3, 8, 8}, 30);
  const Tensor y = AvgPool2dForward(x, 2, 2);
  ExpectClose(Values(AvgPool2dForward(x.To(gpu_), 2, 2)), Values(y),
              "avgpool forward");
  const Tensor dy = Random(y.shape(), 31);
  ExpectClose(Values(AvgPool2dBackward(x.shape(), dy.To(gpu_), 2, 2)),
              Values(AvgPool2dBackward(x.shape(), dy, 2, 2)),
              "avgpool backward");
  ExpectClose(Values(GlobalAvgPoolForward(x.To(gpu_))),
              Values(GlobalAvgPoolForward(x)), "global avg pool forward");
  const Tensor gdy = Random({2, 3}, 32);
  ExpectClose(Values(GlobalAvgPoolBackward(x.shape(), gdy.To(gpu_))),
              Values(GlobalAvgPoolBackward(x.shape(), gdy)),
              "global avg pool backward");
}

TEST_F(CudaOpsTest, BatchNormMatchesTheCpuInTrainingAndInference) {
  const Tensor x = Random({4, 3, 5, 5}, 40), gamma = Random({3}, 41),
               beta = Random({3}, 42), dy = Random({4, 3, 5, 5}, 43);
  BatchNormStats stats{Tensor({3}), Tensor({3}), 0.1f, 1e-5f};
  stats.running_var.Fill(1.0f);
  BatchNormStats stats_gpu{stats.running_mean.To(gpu_),
                           stats.running_var.To(gpu_), 0.1f, 1e-5f};
  BatchNormCache cache, cache_gpu;
  const Tensor y = BatchNorm2dTrainForward(x, gamma, beta, &stats, &cache);
  const Tensor y_gpu = BatchNorm2dTrainForward(
      x.To(gpu_), gamma.To(gpu_), beta.To(gpu_), &stats_gpu, &cache_gpu);
  ExpectClose(Values(y_gpu), Values(y), "batchnorm train forward");
  ExpectClose(Values(stats_gpu.running_mean), Values(stats.running_mean),
              "running mean");
  ExpectClose(Values(stats_gpu.running_var), Values(stats.running_var),
              "running variance");
  const BatchNormGrads g = BatchNorm2dBackward(dy, gamma, cache);
  const BatchNormGrads g_gpu =
      BatchNorm2dBackward(dy.To(gpu_), gamma.To(gpu_), cache_gpu);
  ExpectClose(Values(g_gpu.dx), Values(g.dx), "batchnorm dx");
  ExpectClose(Values(g_gpu.dgamma), Values(g.dgamma), "batchnorm dgamma");
  ExpectClose(Values(g_gpu.dbeta), Values(g.dbeta), "batchnorm dbeta");
  ExpectClose(Values(BatchNorm2dEvalForward(x.To(gpu_), gamma.To(gpu_),
                                            beta.To(gpu_), stats_gpu)),
              Values(BatchNorm2dEvalForward(x, gamma, beta, stats)),
              "batchnorm inference");
}

TEST_F(CudaOpsTest, SoftmaxCrossEntropyMatchesTheCpu) {
  const Tensor logits = Random({33, 10}, 50);
  std::vector<int32_t> labels(33);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = (i * 7) % 10;
  for (Reduction r : {Reduction::kMean, Reduction::kSum}) {
    const LossResult cpu = SoftmaxCrossEntropy(logits, labels.data(), r);
    const LossResult gpu =
        SoftmaxCrossEntropy(logits.To(gpu_), labels.data(), r);
    EXPECT_NEAR(gpu.loss, cpu.loss, 1e-5 * (1 + std::abs(cpu.loss)));
    EXPECT_EQ(gpu.correct, cpu.correct);
    ExpectClose(Values(gpu.dlogits), Values(cpu.dlogits), "dlogits");
  }
  labels[3] = 10;
  EXPECT_THROW(
      SoftmaxCrossEntropy(logits.To(gpu_), labels.data(), Reduction::kSum),
      ShapeError);
}

TEST_F(CudaOpsTest, SynchronisedBatchNormOnGpusIsAClearError) {
  const Tensor x = Random({2, 3, 4, 4}, 60).To(gpu_);
  BatchNormStats stats{Tensor({3}, gpu_), Tensor({3}, gpu_), 0.1f, 1e-5f};
  BatchNormCache cache;
  const ReplicaSum sum = [](double*, int64_t) {};
  try {
    BatchNorm2dTrainForward(x, Tensor({3}, gpu_), Tensor({3}, gpu_), &stats,
                            &cache, sum);
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("synchronised batch norm"));
  }
}

}  // namespace
}  // namespace ringlet::nn
