// GELU, sigmoid, tanh, softmax, max pooling, dropout, layer norm and
// embedding on a GPU against the same ops on
// the CPU, float32 and bfloat16, through the public functions (so the
// kernel tables' CUDA entries are exercised): dropout's masks and the
// embedding's lookups bit for bit, the arithmetic to rounding (erff and
// expf may differ from the host's in the last place; the row sums are in
// double on both; max pooling's values and disjoint windows' gradients bit
// for bit, in either memory format). Skipped with the reason without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gpu/device_probe.h"
#include "nn/compute_options.h"
#include "nn/ops/autocast.h"
#include "nn/ops/dropout.h"
#include "nn/ops/embedding.h"
#include "nn/ops/gelu.h"
#include "nn/ops/layer_norm.h"
#include "nn/ops/max_pool.h"
#include "nn/ops/sigmoid_tanh.h"
#include "nn/ops/softmax.h"

namespace ringlet::nn {
namespace {

class OpKernelsTest : public ::testing::TestWithParam<DType> {
 public:
  void SetUp() override {
    const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
    if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
    gpu_ = Device::Cuda(report.usable[0]);
  }
  // Normal values in the parameter's type (on the CPU).
  static Tensor Random(const Shape& shape, uint32_t seed, float scale = 1.0f) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(NumElements(shape));
    for (float& x : v) x = dist(gen);
    return AsDType(Tensor::FromVector(shape, v), GetParam());
  }
  static std::vector<float> Values(const Tensor& t) {
    const Tensor host = AsDType(t.To(Device::Cpu()), DType::kFloat32);
    return std::vector<float>(host.data(), host.data() + host.numel());
  }
  // Within `ulps` of the type's rounding, relative to the larger value.
  static void ExpectClose(const Tensor& got, const Tensor& want,
                          const std::string& what, double ulps = 2) {
    ASSERT_EQ(got.shape(), want.shape()) << what;
    ASSERT_EQ(got.dtype(), want.dtype()) << what;
    const double eps = want.dtype() == DType::kBFloat16 ? 0x1p-8 : 0x1p-23;
    const std::vector<float> g = Values(got), w = Values(want);
    int failures = 0;
    for (size_t i = 0; i < g.size() && failures < 5; ++i) {
      const double tolerance =
          ulps * eps *
          std::max({1.0, std::abs(double{g[i]}), std::abs(double{w[i]})});
      if (!(std::abs(double{g[i]} - w[i]) <= tolerance)) {
        ADD_FAILURE() << what << " element " << i << ": " << g[i] << " vs "
                      << w[i];
        ++failures;
      }
    }
  }
  static void ExpectBits(const Tensor& got, const Tensor& want,
                         const std::string& what) {
    EXPECT_EQ(Values(got), Values(want)) << what;
  }
  Device gpu_;
};

TEST_P(OpKernelsTest, GeluMatchesTheCpu) {
  const Tensor x = Random({3, 5, 7, 11}, 1, 2.0f), dy = Random(x.shape(), 2);
  ExpectClose(GeluForward(x.To(gpu_)), GeluForward(x), "gelu forward");
  ExpectClose(GeluBackward(x.To(gpu_), dy.To(gpu_)), GeluBackward(x, dy),
              "gelu backward", 4);
}

TEST_P(OpKernelsTest, SigmoidAndTanhMatchTheCpu) {
  const Tensor x = Random({3, 5, 7, 11}, 11, 3.0f), dy = Random(x.shape(), 12);
  const Tensor s = SigmoidForward(x), t = TanhForward(x);
  ExpectClose(SigmoidForward(x.To(gpu_)), s, "sigmoid forward");
  ExpectClose(TanhForward(x.To(gpu_)), t, "tanh forward");
  ExpectClose(SigmoidBackward(s.To(gpu_), dy.To(gpu_)), SigmoidBackward(s, dy),
              "sigmoid backward", 4);
  ExpectClose(TanhBackward(t.To(gpu_), dy.To(gpu_)), TanhBackward(t, dy),
              "tanh backward", 4);
}

TEST_P(OpKernelsTest, SoftmaxMatchesTheCpu) {
  // A classifier's 10 classes, and rows longer than a block.
  for (int64_t k : {10, 1000}) {
    const Tensor x = Random({37, k}, 13, 4.0f), dy = Random(x.shape(), 14);
    const Tensor y = SoftmaxForward(x);
    const std::string at = " k=" + std::to_string(k);
    ExpectClose(SoftmaxForward(x.To(gpu_)), y, "softmax forward" + at, 4);
    ExpectClose(SoftmaxBackward(y.To(gpu_), dy.To(gpu_)),
                SoftmaxBackward(y, dy), "softmax backward" + at, 8);
  }
}

TEST_P(OpKernelsTest, MaxPoolingKeepsTheCpusValuesInEitherFormat) {
  const Tensor x = Random({4, 6, 13, 13}, 15);
  for (const MaxPool2dParams params :
       {MaxPool2dParams{2, 2, 0}, MaxPool2dParams{3, 2, 1}}) {
    const Tensor y = MaxPool2dForward(x, params);
    const Tensor dy = Random(y.shape(), 16);
    const Tensor dx = MaxPool2dBackward(x, y, dy, params);
    const std::string at = " k" + std::to_string(params.kernel);
    for (MemoryFormat format :
         {MemoryFormat::kContiguous, MemoryFormat::kChannelsLast}) {
      const std::string in = at + " " + ToString(format);
      const Tensor xg = x.To(gpu_).ToMemoryFormat(format);
      const Tensor yg = MaxPool2dForward(xg, params);
      ExpectBits(yg.ToMemoryFormat(MemoryFormat::kContiguous), y,
                 "maxpool forward" + in);
      const Tensor dxg = MaxPool2dBackward(xg, yg, dy.To(gpu_), params);
      EXPECT_EQ(dxg.memory_format(), format) << in;
      // Overlapping windows (3, stride 2) add gradients in cuDNN's order.
      ExpectClose(dxg.ToMemoryFormat(MemoryFormat::kContiguous), dx,
                  "maxpool backward" + in, 2);
    }
  }
}

TEST_P(OpKernelsTest, DropoutKeepsTheCpusElements) {
  const Tensor x = Random({4, 3, 17, 19}, 3);
  for (float p : {0.1f, 0.5f, 0.9f}) {
    ExpectBits(DropoutForward(x.To(gpu_), p, 42), DropoutForward(x, p, 42),
               "dropout p=" + std::to_string(p));
    ExpectBits(DropoutBackward(x.To(gpu_), p, 43), DropoutBackward(x, p, 43),
               "dropout backward p=" + std::to_string(p));
  }
}

TEST_P(OpKernelsTest, LayerNormMatchesTheCpu) {
  // Rows shorter and longer than a block (256 threads).
  for (int64_t d : {5, 300, 1024}) {
    const Tensor x = Random({3, 7, d}, 4, 3.0f), dy = Random(x.shape(), 5);
    const Tensor gamma = AsDType(Random({d}, 6), DType::kFloat32);
    const Tensor beta = AsDType(Random({d}, 7), DType::kFloat32);
    LayerNormCache cpu_cache, gpu_cache;
    const Tensor y = LayerNormForward(x, gamma, beta, 1e-5f, &cpu_cache);
    const Tensor y_gpu = LayerNormForward(x.To(gpu_), gamma.To(gpu_),
                                          beta.To(gpu_), 1e-5f, &gpu_cache);
    const std::string at = " d=" + std::to_string(d);
    ExpectClose(y_gpu, y, "layer_norm forward" + at, 8);
    ExpectClose(gpu_cache.rstd, cpu_cache.rstd, "layer_norm rstd" + at, 4);
    const LayerNormGrads g = LayerNormBackward(dy, gamma, cpu_cache);
    const LayerNormGrads g_gpu =
        LayerNormBackward(dy.To(gpu_), gamma.To(gpu_), gpu_cache);
    ExpectClose(g_gpu.dx, g.dx, "layer_norm dx" + at, 64);
    ExpectClose(g_gpu.dgamma, g.dgamma, "layer_norm dgamma" + at, 64);
    ExpectClose(g_gpu.dbeta, g.dbeta, "layer_norm dbeta" + at, 64);
  }
}

TEST_P(OpKernelsTest, EmbeddingMatchesTheCpuAndRefusesBadIds) {
  const Tensor w = AsDType(Random({50, 24}, 8), DType::kFloat32);
  std::vector<float> id_values(6 * 9);
  std::mt19937 gen(9);
  for (float& v : id_values) v = static_cast<float>(gen() % 50);
  const Tensor ids = Tensor::FromVector({6, 9}, id_values);
  Tensor y, y_gpu;
  {
    const auto autocast = ScopedCompute(&ComputeOptions::autocast, GetParam());
    y = EmbeddingForward(ids, w);
    y_gpu = EmbeddingForward(ids.To(gpu_), w.To(gpu_));
  }
  ExpectBits(y_gpu, y, "embedding forward");
  const Tensor dy = Random({6, 9, 24}, 10);
  // The same sums in the same order: the same bits.
  ExpectBits(EmbeddingBackward(ids.To(gpu_), dy.To(gpu_), 50),
             EmbeddingBackward(ids, dy, 50), "embedding backward");
  EXPECT_THROW(EmbeddingForward(Tensor::FromVector({2}, {1.0f, 50.0f}).To(gpu_),
                                w.To(gpu_)),
               ShapeError);
}

INSTANTIATE_TEST_SUITE_P(Types, OpKernelsTest,
                         ::testing::Values(DType::kFloat32, DType::kBFloat16),
                         [](const auto& info) {
                           return std::string(ToString(info.param));
                         });

}  // namespace
}  // namespace ringlet::nn
