// The contract suite of nn's ops on GPUs: every op's forward and backward
// on a GPU against the same op on the CPU, through the public functions (so
// the dispatch is exercised too), on random inputs: exactly for the
// elementwise ops, within 1e-4 relative to the largest value for cuDNN and
// cuBLAS, which sum in other orders. Skipped with the reason without a GPU.

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpu/device_probe.h"
#include "nn/compute_options.h"
#include "nn/gpu_precision.h"
#include "nn/memory_format.h"
#include "nn/ops/activation.h"
#include "nn/ops/autocast.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/cpu_conv_backend.h"
#include "nn/ops/cuda/conv_graph.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/linear.h"
#include "nn/ops/loss.h"
#include "nn/ops/non_finite.h"
#include "nn/ops/pooling.h"
#include "nn/optim/adam_optimizer.h"
#include "nn/optim/optimizer.h"
#include "nn/optim/sgd.h"

namespace ringlet::nn {
namespace {

class CudaOpsTest : public ::testing::Test {
 public:
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
  // In NCHW order whatever t's memory format.
  static std::vector<float> Values(const Tensor& t) {
    const Tensor host =
        t.ToMemoryFormat(MemoryFormat::kContiguous).To(Device::Cpu());
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

// Gradient clipping's two device ops: the scale exactly, the sum of
// squares (in double, another order) within double rounding.
TEST_F(CudaOpsTest, ScaleAndSumOfSquaresMatchTheCpu) {
  const Tensor a = Random({1000, 37}, 80), b = Random({5}, 81);
  const Tensor empty({0});
  const double cpu = SumOfSquares({&a, &b, &empty});
  const Tensor a_gpu = a.To(gpu_), b_gpu = b.To(gpu_),
               empty_gpu = empty.To(gpu_);
  EXPECT_NEAR(SumOfSquares({&a_gpu, &b_gpu, &empty_gpu}), cpu, 1e-9 * cpu);
  // The same bits every call: replicas must agree.
  EXPECT_EQ(SumOfSquares({&a_gpu}), SumOfSquares({&a_gpu}));
  Tensor scaled = a.Clone(), scaled_gpu = a.To(gpu_);
  ScaleInPlace(scaled, 0.37f);
  ScaleInPlace(scaled_gpu, 0.37f);
  EXPECT_EQ(Values(scaled_gpu), Values(scaled));
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

// The gradient check of a queued training step: per-tensor counts as on
// the CPU (many tensors, more than one launch's list), queued without a
// host wait, and an SGD step guarded by them skipped on the device.
TEST_F(CudaOpsTest, NonFiniteCountsMatchTheCpuAndGuardSgdOnTheDevice) {
  std::vector<Tensor> cpu, gpu;
  for (int t = 0; t < 70; ++t) {
    Tensor x = Random({t % 7 == 0 ? 0 : 31 * t + 5}, 100 + t);
    if (x.numel() > 0 && t % 5 == 1) x.data()[t % x.numel()] = std::nanf("");
    if (x.numel() > 0 && t % 9 == 2) x.data()[0] = -INFINITY;
    cpu.push_back(x);
    gpu.push_back(x.To(gpu_));
  }
  std::vector<const Tensor*> cpu_list, gpu_list;
  for (size_t t = 0; t < cpu.size(); ++t) {
    cpu_list.push_back(&cpu[t]);
    gpu_list.push_back(&gpu[t]);
  }
  SgdOptions sgd;
  sgd.lr = 0.5f;
  Tensor p = Random({300}, 7).To(gpu_);
  const Tensor g = Random({300}, 8).To(gpu_);
  const std::vector<float> p_before = Values(p);
  // Only the count and the guarded step: the uploads and the read above
  // wait for the GPU by design (they were inside this window, the 3 waits
  // the H100 reported).
  const uint64_t before = HostWaitsForGpus();
  const NonFiniteCounts on_gpu = QueueCountNonFinite(gpu_list);
  SgdUpdate(p, g, nullptr, sgd, &on_gpu);
  EXPECT_EQ(HostWaitsForGpus() - before, 0u) << "counting made the host wait";
  EXPECT_EQ(on_gpu.Read(), QueueCountNonFinite(cpu_list).Read());
  EXPECT_EQ(on_gpu.FirstBad(), 1);
  EXPECT_EQ(Values(p), p_before) << "the guarded step changed the parameter";
  const NonFiniteCounts clean = QueueCountNonFinite({&g});
  SgdUpdate(p, g, nullptr, sgd, &clean);
  EXPECT_NE(Values(p), p_before) << "a clean guarded step did nothing";
  EXPECT_EQ(clean.FirstBad(), -1);
}

// A whole model's update in a few launches (70 tensors: two lists) gives
// the per-tensor CPU update bit for bit, with and without momentum, and is
// skipped as a whole by the guard; ZeroAll zeroes every listed tensor.
TEST_F(CudaOpsTest, ListedSgdAndZeroingMatchTheCpu) {
  for (float momentum : {0.0f, 0.9f}) {
    SgdOptions options;
    options.lr = 0.05f;
    options.momentum = momentum;
    options.weight_decay = 1e-4f;
    std::vector<Tensor> p_cpu, v_cpu, g_cpu, p_gpu, v_gpu, g_gpu;
    for (int t = 0; t < 70; ++t) {
      const Shape shape = {t % 11 == 0 ? 1 : 37 * t + 3};
      p_cpu.push_back(Random(shape, 200 + t));
      v_cpu.push_back(Random(shape, 300 + t));
      g_cpu.push_back(Random(shape, 400 + t));
      p_gpu.push_back(p_cpu.back().To(gpu_));
      v_gpu.push_back(v_cpu.back().To(gpu_));
      g_gpu.push_back(g_cpu.back().To(gpu_));
    }
    std::vector<Tensor*> values, velocities;
    std::vector<const Tensor*> grads;
    for (int t = 0; t < 70; ++t) {
      SgdUpdate(p_cpu[t], g_cpu[t], &v_cpu[t], options);
      values.push_back(&p_gpu[t]);
      velocities.push_back(&v_gpu[t]);
      grads.push_back(&g_gpu[t]);
    }
    const std::vector<float> before = Values(p_gpu[5]);
    const Tensor nan = Tensor::FromVector({1}, {std::nanf("")}).To(gpu_);
    const NonFiniteCounts bad = QueueCountNonFinite({&nan});
    SgdUpdateAll(values, grads,
                 momentum > 0 ? velocities : std::vector<Tensor*>(), options,
                 &bad);
    EXPECT_EQ(Values(p_gpu[5]), before) << "a guarded list was updated";
    SgdUpdateAll(values, grads,
                 momentum > 0 ? velocities : std::vector<Tensor*>(), options);
    for (int t = 0; t < 70; ++t) {
      ASSERT_EQ(Values(p_gpu[t]), Values(p_cpu[t]))
          << "momentum " << momentum << ", tensor " << t;
      if (momentum > 0) {
        ASSERT_EQ(Values(v_gpu[t]), Values(v_cpu[t])) << t;
      }
    }
    ZeroAll(values);
    for (int t = 0; t < 70; ++t) {
      ASSERT_EQ(Values(p_gpu[t]), std::vector<float>(p_gpu[t].numel(), 0.0f))
          << t;
    }
  }
}

// Adam and AdamW through the listed kernel: the CPU step within float
// rounding (nvcc may fuse a multiply and an add), skipped when guarded.
TEST_F(CudaOpsTest, ListedAdamMatchesTheCpu) {
  for (const char* name : {"adam", "adamw"}) {
    AdamOptions options;
    options.decoupled = std::string(name) == "adamw";
    options.lr = 0.01f;
    options.weight_decay = 0.05f;
    std::vector<Tensor> p_cpu, m_cpu, v_cpu, g_cpu, p_gpu, m_gpu, v_gpu, g_gpu;
    for (int t = 0; t < 70; ++t) {
      const Shape shape = {t % 11 == 0 ? 1 : 37 * t + 3};
      p_cpu.push_back(Random(shape, 200 + t));
      m_cpu.push_back(Random(shape, 300 + t));
      Tensor v = Random(shape, 500 + t);
      for (int64_t i = 0; i < v.numel(); ++i) v.data()[i] *= v.data()[i];
      v_cpu.push_back(v);
      g_cpu.push_back(Random(shape, 400 + t));
      p_gpu.push_back(p_cpu.back().To(gpu_));
      m_gpu.push_back(m_cpu.back().To(gpu_));
      v_gpu.push_back(v_cpu.back().To(gpu_));
      g_gpu.push_back(g_cpu.back().To(gpu_));
    }
    auto pointers = [](std::vector<Tensor>& list) {
      std::vector<Tensor*> out;
      for (Tensor& t : list) out.push_back(&t);
      return out;
    };
    std::vector<const Tensor*> grads_cpu, grads_gpu;
    for (int t = 0; t < 70; ++t) {
      grads_cpu.push_back(&g_cpu[t]);
      grads_gpu.push_back(&g_gpu[t]);
    }
    AdamUpdateAll(pointers(p_cpu), grads_cpu, pointers(m_cpu), pointers(v_cpu),
                  options, /*step=*/3);
    const std::vector<float> before = Values(p_gpu[5]);
    const Tensor nan = Tensor::FromVector({1}, {std::nanf("")}).To(gpu_);
    const NonFiniteCounts bad = QueueCountNonFinite({&nan});
    AdamUpdateAll(pointers(p_gpu), grads_gpu, pointers(m_gpu), pointers(v_gpu),
                  options, 3, &bad);
    EXPECT_EQ(Values(p_gpu[5]), before) << "a guarded list was updated";
    AdamUpdateAll(pointers(p_gpu), grads_gpu, pointers(m_gpu), pointers(v_gpu),
                  options, 3);
    for (int t = 0; t < 70; ++t) {
      const std::vector<float> got = Values(p_gpu[t]), want = Values(p_cpu[t]);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-6f * (1 + std::abs(want[i])))
            << name << ", tensor " << t << ", element " << i;
      }
    }
  }
}

// Lion through the listed kernel: the CPU step (the same element function;
// a sign may differ only where nvcc's fused multiply-add moves an
// interpolation across 0), skipped when guarded.
TEST_F(CudaOpsTest, ListedLionMatchesTheCpu) {
  OptimizerOptions options;
  options.name = "lion";
  options.lr = 0.001f;
  options.weight_decay = 0.1f;
  options.beta2 = 0.99f;
  std::vector<Tensor> p_cpu, g_cpu, p_gpu, g_gpu;
  std::vector<std::string> names;
  for (int t = 0; t < 70; ++t) {
    const Shape shape = {t % 11 == 0 ? 1 : 37 * t + 3};
    p_cpu.push_back(Random(shape, 600 + t));
    g_cpu.push_back(Random(shape, 700 + t));
    p_gpu.push_back(p_cpu.back().To(gpu_));
    g_gpu.push_back(g_cpu.back().To(gpu_));
    names.push_back("t" + std::to_string(t));
  }
  std::vector<Tensor*> values_cpu, values_gpu;
  std::vector<const Tensor*> grads_cpu, grads_gpu;
  for (int t = 0; t < 70; ++t) {
    values_cpu.push_back(&p_cpu[t]);
    values_gpu.push_back(&p_gpu[t]);
    grads_cpu.push_back(&g_cpu[t]);
    grads_gpu.push_back(&g_gpu[t]);
  }
  auto cpu = MakeOptimizer(options, values_cpu, names);
  auto gpu = MakeOptimizer(options, values_gpu, names);
  const std::vector<float> before = Values(p_gpu[5]);
  const Tensor nan = Tensor::FromVector({1}, {std::nanf("")}).To(gpu_);
  const NonFiniteCounts bad = QueueCountNonFinite({&nan});
  gpu->Step(grads_gpu, &bad);
  EXPECT_EQ(Values(p_gpu[5]), before) << "a guarded list was updated";
  for (int step = 0; step < 3; ++step) {
    cpu->Step(grads_cpu);
    gpu->Step(grads_gpu);
  }
  int64_t flipped = 0, total = 0;
  for (int t = 0; t < 70; ++t) {
    const std::vector<float> got = Values(p_gpu[t]), want = Values(p_cpu[t]);
    for (size_t i = 0; i < got.size(); ++i) {
      ++total;
      if (std::abs(got[i] - want[i]) > 1e-6f * (1 + std::abs(want[i]))) {
        ++flipped;
      }
    }
  }
  EXPECT_LE(flipped, total / 100000 + 1) << "of " << total << " elements";
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

// Largest |got - want| within `steps` bfloat16 steps (2^-7) of the largest
// |want|, both read back as float32: bfloat16 results whose sums ran in
// another order may round a step apart.
void ExpectWithinBf16Steps(const Tensor& got, const Tensor& want, double steps,
                           const std::string& what) {
  const auto nchw = [](const Tensor& t) {
    return t.ToMemoryFormat(MemoryFormat::kContiguous)
        .To(Device::Cpu())
        .To(DType::kFloat32);
  };
  const Tensor g = nchw(got), w = nchw(want);
  ASSERT_EQ(g.numel(), w.numel()) << what;
  double largest = 0, worst = 0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    largest = std::max<double>(largest, std::abs(w.data()[i]));
    worst = std::max<double>(worst, std::abs(g.data()[i] - w.data()[i]));
  }
  EXPECT_LE(worst, steps * std::ldexp(largest, -7)) << what;
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

// The graph API ran the last `expected` convolutions since `before` (a
// silent fallback to the legacy API fails).
void ExpectGraphRan(uint64_t before, uint64_t expected,
                    const std::string& what) {
  EXPECT_EQ(cuda_ops::GraphConvolutionsRun() - before, expected)
      << what
      << "fell back to the legacy API: " << cuda_ops::LastGraphFallback();
}

void ExpectBf16ConvolutionsMatchTheCpuReference(Device gpu,
                                                MemoryFormat format) {
  const auto on_gpu = [&](const Tensor& t) {
    return t.To(gpu).ToMemoryFormat(format);
  };
  const auto on = ScopedCompute(&ComputeOptions::autocast, DType::kBFloat16);
  const auto conv_backend =
      ScopedCompute(&ComputeOptions::cpu_conv,
                    CpuConvBackend::kEigen);  // The reference on any CPU.
  // The legacy API's measured choice, and the graph API's plans.
  for (const ConvAlgorithms choice :
       {ConvAlgorithms::kMeasure, ConvAlgorithms::kGraph}) {
    const auto algorithms2 =
        ScopedCompute(&ComputeOptions::conv_algorithms, choice);
    for (const Conv2dParams params : {Conv2dParams{1, 1}, Conv2dParams{2, 0}}) {
      const std::string what = std::string("bf16 conv2d (") + Name(choice) +
                               ", " + ToString(format) + ", stride " +
                               std::to_string(params.stride) + ") ";
      const uint64_t graph_runs = cuda_ops::GraphConvolutionsRun();
      const Tensor x = CudaOpsTest::Random({8, 16, 9, 9}, 90),
                   w = CudaOpsTest::Random({32, 16, 3, 3}, 91),
                   b = CudaOpsTest::Random({32}, 92);
      const Tensor y = Conv2dForward(x, w, b, params);
      const Tensor y_gpu =
          Conv2dForward(on_gpu(x), w.To(gpu), b.To(gpu), params);
      EXPECT_EQ(y_gpu.dtype(), DType::kBFloat16);
      EXPECT_EQ(y_gpu.memory_format(), format);
      ExpectWithinBf16Steps(y_gpu, y, 1, what + "forward");
      const Tensor dy = CudaOpsTest::Random(y.shape(), 93).To(DType::kBFloat16);
      const Tensor x16 = x.To(DType::kBFloat16);
      const Conv2dGrads g = Conv2dBackward(x16, w, true, dy, params);
      const Conv2dGrads g_gpu =
          Conv2dBackward(on_gpu(x16), w.To(gpu), true, on_gpu(dy), params);
      EXPECT_EQ(g_gpu.dx.dtype(), DType::kBFloat16);
      EXPECT_EQ(g_gpu.dx.memory_format(), format);
      EXPECT_EQ(g_gpu.dw.dtype(), DType::kFloat32);
      ExpectWithinBf16Steps(g_gpu.dx, g.dx, 1, what + "dx");
      ExpectWithinBf16Steps(g_gpu.dw, g.dw, 2, what + "dw");
      ExpectClose(CudaOpsTest::Values(g_gpu.db), CudaOpsTest::Values(g.db),
                  what + "db");
      if (choice == ConvAlgorithms::kGraph) ExpectGraphRan(graph_runs, 3, what);
    }
  }
  const auto algorithms3 =
      ScopedCompute(&ComputeOptions::conv_algorithms, ConvAlgorithms::kMeasure);
}

// bfloat16 convolutions (autocast) on cuDNN's bfloat16 configuration
// against the CPU's reference (float32 sums of the bfloat16 values): the
// outputs and dx within one bfloat16 step (2^-7 of the largest value, as
// the sums' order may move a rounding), dw within two (cuDNN writes it in
// bfloat16 before it is widened), db (float32 sums) within 1e-4.
TEST_F(CudaOpsTest, Bf16ConvolutionsMatchTheCpuReference) {
  ExpectBf16ConvolutionsMatchTheCpuReference(gpu_, MemoryFormat::kContiguous);
}

// The same with NHWC activations (and a [K, R, S, C] filter).
TEST_F(CudaOpsTest, ChannelsLastBf16ConvolutionsMatchTheCpuReference) {
  ExpectBf16ConvolutionsMatchTheCpuReference(gpu_, MemoryFormat::kChannelsLast);
}

// Linear layers in bfloat16 through cublasGemmEx against the CPU's
// reference: y and dx within one bfloat16 step of the largest value, dw
// (float32 sums of bfloat16 products) and db within 1e-4.
TEST_F(CudaOpsTest, Bf16LinearMatchesTheCpuReference) {
  const auto on = ScopedCompute(&ComputeOptions::autocast, DType::kBFloat16);
  const Tensor x = Random({33, 70}, 100), w = Random({70, 10}, 101),
               b = Random({10}, 102);
  const Tensor dy = Random({33, 10}, 103);
  const Tensor y = LinearForward(x, w, b);
  const Tensor y_gpu = LinearForward(x.To(gpu_), w.To(gpu_), b.To(gpu_));
  EXPECT_EQ(y_gpu.dtype(), DType::kBFloat16);
  ExpectWithinBf16Steps(y_gpu, y, 1, "bf16 linear forward");
  const Tensor x16 = x.To(DType::kBFloat16);
  const LinearGrads g = LinearBackward(x16, w, true, dy);
  const LinearGrads g_gpu =
      LinearBackward(x16.To(gpu_), w.To(gpu_), true, dy.To(gpu_));
  EXPECT_EQ(g_gpu.dx.dtype(), DType::kBFloat16);
  EXPECT_EQ(g_gpu.dw.dtype(), DType::kFloat32);
  ExpectWithinBf16Steps(g_gpu.dx, g.dx, 1, "bf16 linear dx");
  ExpectClose(Values(g_gpu.dw), Values(g.dw), "bf16 linear dw");
  ExpectClose(Values(g_gpu.db), Values(g.db), "bf16 linear db");
}

// ReLU and add in bfloat16 on kernels of ours, bit for bit the CPU's (on
// -0, the infinities and NaN too); batch norm in bfloat16 on cuDNN's
// (float32 statistics) within one bfloat16 step of the CPU's, whose
// statistics are the same sums in another order.
TEST_F(CudaOpsTest, Bf16ReluAddAndBatchNormMatchTheCpu) {
  Tensor x = Random({4, 3, 5, 7}, 95).To(DType::kBFloat16);
  const uint16_t specials[] = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x0001};
  std::copy(std::begin(specials), std::end(specials), x.bf16_data());
  const Tensor dy = Random(x.shape(), 96).To(DType::kBFloat16);
  const auto bits = [](const Tensor& t) {
    const Tensor host = t.To(Device::Cpu());
    return std::vector<uint16_t>(host.bf16_data(),
                                 host.bf16_data() + host.numel());
  };
  const Tensor y = ReluForward(x), y_gpu = ReluForward(x.To(gpu_));
  EXPECT_EQ(y_gpu.dtype(), DType::kBFloat16);
  EXPECT_EQ(bits(y_gpu), bits(y));
  EXPECT_EQ(bits(ReluBackward(y_gpu, dy.To(gpu_))), bits(ReluBackward(y, dy)));
  EXPECT_EQ(bits(Add(y_gpu, dy.To(gpu_))), bits(Add(y, dy)));
  Tensor sum = y_gpu.Clone();
  AddInPlace(sum, dy.To(gpu_));
  EXPECT_EQ(bits(sum), bits(Add(y, dy)));

  const Tensor gamma = Random({3}, 97), beta = Random({3}, 98);
  const Tensor xb = Random({4, 3, 5, 7}, 99).To(DType::kBFloat16);
  BatchNormStats cpu_stats{Tensor({3}), Tensor({3})}, gpu_stats;
  cpu_stats.running_var.Fill(1.0f);
  gpu_stats = {cpu_stats.running_mean.To(gpu_), cpu_stats.running_var.To(gpu_)};
  BatchNormCache cpu_cache, gpu_cache;
  const Tensor bn =
      BatchNorm2dTrainForward(xb, gamma, beta, &cpu_stats, &cpu_cache);
  const Tensor bn_gpu = BatchNorm2dTrainForward(
      xb.To(gpu_), gamma.To(gpu_), beta.To(gpu_), &gpu_stats, &gpu_cache);
  EXPECT_EQ(bn_gpu.dtype(), DType::kBFloat16);
  ExpectWithinBf16Steps(bn_gpu, bn, 1, "bf16 batch norm forward");
  ExpectClose(Values(gpu_stats.running_mean), Values(cpu_stats.running_mean),
              "bf16 batch norm running mean");
  const BatchNormGrads g = BatchNorm2dBackward(dy, gamma, cpu_cache);
  const BatchNormGrads g_gpu =
      BatchNorm2dBackward(dy.To(gpu_), gamma.To(gpu_), gpu_cache);
  EXPECT_EQ(g_gpu.dx.dtype(), DType::kBFloat16);
  ExpectWithinBf16Steps(g_gpu.dx, g.dx, 1, "bf16 batch norm dx");
  ExpectClose(Values(g_gpu.dgamma), Values(g.dgamma), "bf16 dgamma");
  ExpectClose(Values(g_gpu.dbeta), Values(g.dbeta), "bf16 dbeta");
}

// The bias gradient sums each channel over many blocks of whole images,
// then their partial sums (the last block short); one image, 1x1 maps and
// many images each take another split. Same bits on a second run.
TEST_F(CudaOpsTest, Conv2dBiasGradientOverManyImagesMatchesTheCpu) {
  for (const auto& [n, size] :
       {std::pair<int64_t, int64_t>{300, 9}, {1, 9}, {1000, 1}, {64, 28}}) {
    const Tensor x = Random({n, 2, size, size}, 20),
                 w = Random({3, 2, 1, 1}, 21);
    const Conv2dParams params{1, 0};
    const Tensor dy = Random({n, 3, size, size}, 22);
    const Conv2dGrads g = Conv2dBackward(x, w, true, dy, params);
    const Tensor dy_gpu = dy.To(gpu_);
    const Conv2dGrads g_gpu =
        Conv2dBackward(x.To(gpu_), w.To(gpu_), true, dy_gpu, params);
    const std::string what = "bias gradient, " + std::to_string(n) +
                             " images of " + std::to_string(size) + "x" +
                             std::to_string(size);
    ExpectClose(Values(g_gpu.db), Values(g.db), what);
    const Conv2dGrads again =
        Conv2dBackward(x.To(gpu_), w.To(gpu_), true, dy_gpu, params);
    EXPECT_EQ(Values(again.db), Values(g_gpu.db)) << what << ", twice";
  }
}

// Every way of choosing cuDNN's algorithms gives the CPU's results within
// float32 rounding; deterministic ones give the same bits twice. (The shape
// differs from the test above, so each setting makes its own choices.)
TEST_F(CudaOpsTest, Conv2dMatchesTheCpuUnderEveryAlgorithmChoice) {
  const Tensor x = Random({8, 16, 14, 14}, 14), w = Random({32, 16, 3, 3}, 15),
               b = Random({32}, 16);
  const Conv2dParams params{2, 1};
  const Tensor y = Conv2dForward(x, w, b, params);
  const Tensor dy = Random(y.shape(), 17);
  const Conv2dGrads g = Conv2dBackward(x, w, true, dy, params);
  for (ConvAlgorithms choice :
       {ConvAlgorithms::kMeasure, ConvAlgorithms::kHeuristic,
        ConvAlgorithms::kDeterministic}) {
    const auto algorithms4 =
        ScopedCompute(&ComputeOptions::conv_algorithms, choice);
    const std::string what = Name(choice);
    std::vector<float> first_dw;
    for (int run = 0; run < 2; ++run) {
      ExpectClose(
          Values(Conv2dForward(x.To(gpu_), w.To(gpu_), b.To(gpu_), params)),
          Values(y), what + " forward");
      const Conv2dGrads g_gpu =
          Conv2dBackward(x.To(gpu_), w.To(gpu_), true, dy.To(gpu_), params);
      ExpectClose(Values(g_gpu.dx), Values(g.dx), what + " dx");
      ExpectClose(Values(g_gpu.dw), Values(g.dw), what + " dw");
      if (run == 0) first_dw = Values(g_gpu.dw);
      if (run == 1 && choice == ConvAlgorithms::kDeterministic) {
        EXPECT_EQ(Values(g_gpu.dw), first_dw) << "deterministic dw";
      }
    }
  }
}

// --conv_algorithms=graph runs every direction through cuDNN's graph API
// (counted, so a silent fallback to the legacy API fails the test) and
// gives the CPU's results within float32 rounding, on odd sizes, stride 2
// and ResNet's shapes at batch 64, in fp32 (no TF32 engines).
TEST_F(CudaOpsTest, GraphApiConvolutionsMatchTheCpu) {
  const auto algorithms5 =
      ScopedCompute(&ComputeOptions::conv_algorithms, ConvAlgorithms::kGraph);
  struct Case {
    Shape x, w;
    Conv2dParams params;
  };
  for (const Case& c : {Case{{3, 4, 9, 9}, {5, 4, 3, 3}, {1, 1}},
                        Case{{3, 4, 9, 9}, {5, 4, 3, 3}, {2, 0}},
                        Case{{64, 64, 28, 28}, {64, 64, 3, 3}, {1, 1}},
                        Case{{64, 128, 14, 14}, {256, 128, 1, 1}, {2, 0}}}) {
    const std::string what = "graph " + ToString(c.x) + " * " + ToString(c.w) +
                             " stride " + std::to_string(c.params.stride);
    const Tensor x = Random(c.x, 30), w = Random(c.w, 31),
                 b = Random({c.w[0]}, 32);
    const Tensor y = Conv2dForward(x, w, b, c.params);
    const Tensor dy = Random(y.shape(), 33);
    const Conv2dGrads g = Conv2dBackward(x, w, true, dy, c.params);
    const uint64_t before = cuda_ops::GraphConvolutionsRun();
    ExpectClose(
        Values(Conv2dForward(x.To(gpu_), w.To(gpu_), b.To(gpu_), c.params)),
        Values(y), what + " forward");
    const Conv2dGrads g_gpu =
        Conv2dBackward(x.To(gpu_), w.To(gpu_), true, dy.To(gpu_), c.params);
    ExpectClose(Values(g_gpu.dx), Values(g.dx), what + " dx");
    ExpectClose(Values(g_gpu.dw), Values(g.dw), what + " dw");
    ExpectClose(Values(g_gpu.db), Values(g.db), what + " db");
    ExpectGraphRan(before, 3, what + ": ");
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

// Batch norm on the GPU against the CPU op in training (with `gpu_sum`
// as the GPU's replica sum: null for cuDNN's path), backward and
// inference, within `tolerance`, the GPU's input and output gradient in
// `format` (its outputs must keep it).
void ExpectBatchNormMatchesTheCpu(
    Device gpu, const ReplicaSum& gpu_sum, float tolerance, uint32_t seed,
    MemoryFormat format = MemoryFormat::kContiguous) {
  const auto random = CudaOpsTest::Random;
  const auto values = CudaOpsTest::Values;
  const Tensor x = random({4, 3, 5, 5}, seed), gamma = random({3}, seed + 1),
               beta = random({3}, seed + 2),
               dy = random({4, 3, 5, 5}, seed + 3);
  BatchNormStats stats{Tensor({3}), Tensor({3}), 0.1f, 1e-5f};
  stats.running_var.Fill(1.0f);
  BatchNormStats stats_gpu{stats.running_mean.To(gpu),
                           stats.running_var.To(gpu), 0.1f, 1e-5f};
  BatchNormCache cache, cache_gpu;
  const Tensor y = BatchNorm2dTrainForward(x, gamma, beta, &stats, &cache);
  const Tensor x_gpu = x.To(gpu).ToMemoryFormat(format);
  const Tensor y_gpu = BatchNorm2dTrainForward(
      x_gpu, gamma.To(gpu), beta.To(gpu), &stats_gpu, &cache_gpu, gpu_sum);
  EXPECT_EQ(y_gpu.memory_format(), format);
  ExpectClose(values(y_gpu), values(y), "batchnorm train forward", tolerance);
  ExpectClose(values(stats_gpu.running_mean), values(stats.running_mean),
              "running mean", tolerance);
  ExpectClose(values(stats_gpu.running_var), values(stats.running_var),
              "running variance", tolerance);
  const BatchNormGrads g = BatchNorm2dBackward(dy, gamma, cache);
  const BatchNormGrads g_gpu = BatchNorm2dBackward(
      dy.To(gpu).ToMemoryFormat(format), gamma.To(gpu), cache_gpu, gpu_sum);
  EXPECT_EQ(g_gpu.dx.memory_format(), format);
  ExpectClose(values(g_gpu.dx), values(g.dx), "batchnorm dx", tolerance);
  ExpectClose(values(g_gpu.dgamma), values(g.dgamma), "batchnorm dgamma",
              tolerance);
  ExpectClose(values(g_gpu.dbeta), values(g.dbeta), "batchnorm dbeta",
              tolerance);
  ExpectClose(values(BatchNorm2dEvalForward(x_gpu, gamma.To(gpu), beta.To(gpu),
                                            stats_gpu)),
              values(BatchNorm2dEvalForward(x, gamma, beta, stats)),
              "batchnorm inference", tolerance);
}

// --precision=tf32 reaches the tensor cores: TF32 keeps 10 bits of each
// input's mantissa, so on a shape where tensor cores win the result moves
// off the fp32 one by about 1e-3 and stays within TF32's error of the
// CPU's. (The descriptor must ask for CUDNN_TENSOR_OP_MATH: with
// CUDNN_DEFAULT_MATH every choice was an fp32 kernel.)
TEST_F(CudaOpsTest, Tf32ConvolutionsRunOnTensorCores) {
  cudaDeviceProp props;
  ASSERT_EQ(cudaGetDeviceProperties(&props, gpu_.index), cudaSuccess);
  if (props.major < 8) {
    GTEST_SKIP() << "TF32 needs compute capability 8.0 or later; this GPU "
                 << props.major << "." << props.minor;
  }
  // A 1x1 convolution, a GEMM of 12544 x 512 x 512, where tensor cores win
  // by several times: the measured choice in TF32 is the fastest of all
  // candidates, fp32 kernels included, and on a GEMM of 6272 x 256 x 256
  // (and a 3x3 shape of 64 channels at 14x14) the H100 chose an fp32 one.
  const Tensor x = Random({64, 512, 14, 14}, 60),
               w = Random({512, 512, 1, 1}, 61), b = Random({512}, 62);
  const Tensor x_gpu = x.To(gpu_), w_gpu = w.To(gpu_), b_gpu = b.To(gpu_);
  const Conv2dParams pointwise = {1, 0};
  const std::vector<float> fp32 =
      Values(Conv2dForward(x_gpu, w_gpu, b_gpu, pointwise));
  const auto precision2 =
      ScopedCompute(&ComputeOptions::gpu_precision, GpuPrecision::kTf32);
  const std::vector<float> tf32 =
      Values(Conv2dForward(x_gpu, w_gpu, b_gpu, pointwise));
  const auto precision3 =
      ScopedCompute(&ComputeOptions::gpu_precision, GpuPrecision::kFp32);
  ExpectClose(tf32, Values(Conv2dForward(x, w, b, pointwise)),
              "tf32 vs the CPU", 1e-2f);
  float largest = 0, moved = 0;
  for (size_t i = 0; i < fp32.size(); ++i) {
    largest = std::max(largest, std::abs(fp32[i]));
    moved = std::max(moved, std::abs(tf32[i] - fp32[i]));
  }
  EXPECT_GT(moved, 1e-5f * largest)
      << "TF32 gave the fp32 result: the convolution ran without tensor cores";
}

TEST_F(CudaOpsTest, BatchNormMatchesTheCpuInTrainingAndInference) {
  ExpectBatchNormMatchesTheCpu(gpu_, nullptr, 1e-4f, 40);
}

// The batch norm's epilogue on a GPU (one in-place pass over cuDNN's
// output) gives the separate ops' bits: Add then ReluForward, in float32
// and bfloat16 (special values in the residual: -0, infinities, a NaN),
// the residual in the output's format or the other; its backward's
// residual gradient is ReluBackward's.
TEST_F(CudaOpsTest, BatchNormEpilogueEqualsTheSeparateOps) {
  const auto bits = [](const Tensor& t) {
    const Tensor host =
        t.ToMemoryFormat(MemoryFormat::kContiguous).To(Device::Cpu());
    const auto* p = static_cast<const uint8_t*>(host.raw_data());
    return std::vector<uint8_t>(p, p + host.nbytes());
  };
  const Shape shape = {4, 3, 5, 6};
  const Tensor gamma = Random({3}, 140).To(gpu_),
               beta = Random({3}, 141).To(gpu_);
  for (const DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    const Tensor x = Random(shape, 142).To(dtype).To(gpu_);
    Tensor residual_host = Random(shape, 143).To(dtype);
    if (dtype == DType::kBFloat16) {
      const uint16_t specials[] = {0x8000, 0x7F80, 0xFF80, 0x7FC0};
      std::copy(std::begin(specials), std::end(specials),
                residual_host.bf16_data());
    }
    const Tensor dy = Random(shape, 144).To(dtype).To(gpu_);
    for (const MemoryFormat format :
         {MemoryFormat::kContiguous, MemoryFormat::kChannelsLast}) {
      const Tensor xf = x.ToMemoryFormat(format);
      const Tensor residual = residual_host.To(gpu_);  // Contiguous.
      for (const bool relu : {false, true}) {
        for (const bool add : {false, true}) {
          if (!relu && !add) continue;
          const std::string what =
              std::string(ToString(dtype)) + " " + ToString(format) +
              (add ? " +residual" : "") + (relu ? " relu" : "");
          const auto fresh_stats = [&] {
            BatchNormStats stats{Tensor({3}, gpu_), Tensor({3}, gpu_)};
            stats.running_var.Fill(1.0f);
            return stats;
          };
          BatchNormStats fused_stats = fresh_stats(),
                         plain_stats = fresh_stats();
          BatchNormCache fused_cache, plain_cache;
          const BatchNormEpilogue epilogue{add ? residual : Tensor(), relu};
          const Tensor fused = BatchNorm2dTrainForward(
              xf, gamma, beta, &fused_stats, &fused_cache, nullptr, epilogue);
          Tensor plain = BatchNorm2dTrainForward(xf, gamma, beta, &plain_stats,
                                                 &plain_cache);
          if (add) plain = Add(plain, residual);
          if (relu) plain = ReluForward(plain);
          EXPECT_EQ(fused.memory_format(), format) << what;
          EXPECT_EQ(bits(fused), bits(plain)) << what;
          BatchNormStats eval_stats = fresh_stats();
          Tensor eval_plain =
              BatchNorm2dEvalForward(xf, gamma, beta, eval_stats);
          if (add) eval_plain = Add(eval_plain, residual);
          if (relu) eval_plain = ReluForward(eval_plain);
          EXPECT_EQ(bits(BatchNorm2dEvalForward(xf, gamma, beta, eval_stats,
                                                epilogue)),
                    bits(eval_plain))
              << what << " (inference)";
          if (add) {
            const BatchNormGrads g =
                BatchNorm2dBackward(dy, gamma, fused_cache);
            EXPECT_EQ(bits(g.d_residual),
                      bits(relu ? ReluBackward(fused, dy) : dy))
                << what << " (residual gradient)";
          }
        }
      }
    }
  }
}

// Channels-last batch norm: cuDNN's NHWC descriptors, and our synchronised
// kernels reading NHWC as one-pixel NCHW images.
TEST_F(CudaOpsTest, ChannelsLastBatchNormMatchesTheCpu) {
  ExpectBatchNormMatchesTheCpu(gpu_, nullptr, 1e-4f, 41,
                               MemoryFormat::kChannelsLast);
  ExpectBatchNormMatchesTheCpu(
      gpu_, [](double*, int64_t) {}, 1e-5f, 61, MemoryFormat::kChannelsLast);
}

// Channels-last convolutions (NHWC activations, [K, R, S, C] filters)
// against the CPU, through the legacy API and the graph API, with a bias,
// stride and padding: the output and dx channels-last, dw and db float32
// in the parameters' own layout. Under --layout=nhwc a contiguous input
// (a model's images) runs channels-last and its gradient comes back
// contiguous.
TEST_F(CudaOpsTest, ChannelsLastConvolutionsMatchTheCpu) {
  const Tensor x = Random({3, 8, 9, 9}, 110), w = Random({16, 8, 3, 3}, 111),
               b = Random({16}, 112);
  for (const ConvAlgorithms choice :
       {ConvAlgorithms::kMeasure, ConvAlgorithms::kGraph}) {
    const auto algorithms6 =
        ScopedCompute(&ComputeOptions::conv_algorithms, choice);
    for (const Conv2dParams params : {Conv2dParams{1, 1}, Conv2dParams{2, 0}}) {
      const std::string what = std::string("nhwc conv2d (") + Name(choice) +
                               ", stride " + std::to_string(params.stride) +
                               ") ";
      const uint64_t graph_runs = cuda_ops::GraphConvolutionsRun();
      const Tensor y = Conv2dForward(x, w, b, params);
      const Tensor x_last =
          x.To(gpu_).ToMemoryFormat(MemoryFormat::kChannelsLast);
      const Tensor y_gpu =
          Conv2dForward(x_last, w.To(gpu_), b.To(gpu_), params);
      EXPECT_EQ(y_gpu.memory_format(), MemoryFormat::kChannelsLast) << what;
      ExpectClose(Values(y_gpu), Values(y), what + "forward");
      const Tensor dy = Random(y.shape(), 113);
      const Conv2dGrads g = Conv2dBackward(x, w, true, dy, params);
      const Conv2dGrads g_gpu = Conv2dBackward(
          x_last, w.To(gpu_), true,
          dy.To(gpu_).ToMemoryFormat(MemoryFormat::kChannelsLast), params);
      EXPECT_EQ(g_gpu.dx.memory_format(), MemoryFormat::kChannelsLast);
      EXPECT_EQ(g_gpu.dw.memory_format(), MemoryFormat::kContiguous);
      ExpectClose(Values(g_gpu.dx), Values(g.dx), what + "dx");
      ExpectClose(Values(g_gpu.dw), Values(g.dw), what + "dw");
      ExpectClose(Values(g_gpu.db), Values(g.db), what + "db");
      if (choice == ConvAlgorithms::kGraph) ExpectGraphRan(graph_runs, 3, what);
    }
  }
  const auto algorithms7 =
      ScopedCompute(&ComputeOptions::conv_algorithms, ConvAlgorithms::kMeasure);
  {
    const auto nhwc =
        ScopedCompute(&ComputeOptions::gpu_layout, MemoryFormat::kChannelsLast);
    const Tensor y_gpu = Conv2dForward(x.To(gpu_), w.To(gpu_), b.To(gpu_), {});
    EXPECT_EQ(y_gpu.memory_format(), MemoryFormat::kChannelsLast);
    ExpectClose(Values(y_gpu), Values(Conv2dForward(x, w, b, {})),
                "--layout=nhwc forward");
    const Tensor dy = Random(y_gpu.shape(), 114);
    const Conv2dGrads g_gpu =
        Conv2dBackward(x.To(gpu_), w.To(gpu_), true, dy.To(gpu_), {});
    EXPECT_EQ(g_gpu.dx.memory_format(), MemoryFormat::kContiguous);
    ExpectClose(Values(g_gpu.dx), Values(Conv2dBackward(x, w, true, dy, {}).dx),
                "--layout=nhwc dx");
  }
}

// Pooling keeps channels-last; global pooling's gradient takes the
// process's format; elementwise ops given mixed formats convert the second
// operand to the first's, so the values never depend on the formats.
TEST_F(CudaOpsTest, ChannelsLastPoolingAndElementwiseOpsMatchTheCpu) {
  const auto nhwc =
      ScopedCompute(&ComputeOptions::gpu_layout, MemoryFormat::kChannelsLast);
  const Tensor x = Random({2, 3, 8, 8}, 130);
  const Tensor x_last = x.To(gpu_).ToMemoryFormat(MemoryFormat::kChannelsLast);
  const Tensor y = AvgPool2dForward(x, 2, 2);
  const Tensor y_gpu = AvgPool2dForward(x_last, 2, 2);
  EXPECT_EQ(y_gpu.memory_format(), MemoryFormat::kChannelsLast);
  ExpectClose(Values(y_gpu), Values(y), "nhwc avgpool forward");
  const Tensor dy = Random(y.shape(), 131);
  const Tensor dx_gpu = AvgPool2dBackward(
      x.shape(), dy.To(gpu_).ToMemoryFormat(MemoryFormat::kChannelsLast), 2, 2);
  EXPECT_EQ(dx_gpu.memory_format(), MemoryFormat::kChannelsLast);
  ExpectClose(Values(dx_gpu), Values(AvgPool2dBackward(x.shape(), dy, 2, 2)),
              "nhwc avgpool backward");
  ExpectClose(Values(GlobalAvgPoolForward(x_last)),
              Values(GlobalAvgPoolForward(x)), "nhwc global avg pool forward");
  const Tensor gdy = Random({2, 3}, 132);
  const Tensor gdx_gpu = GlobalAvgPoolBackward(x.shape(), gdy.To(gpu_));
  EXPECT_EQ(gdx_gpu.memory_format(), MemoryFormat::kChannelsLast);
  ExpectClose(Values(gdx_gpu), Values(GlobalAvgPoolBackward(x.shape(), gdy)),
              "nhwc global avg pool backward");

  const Tensor other = Random(x.shape(), 133);
  const Tensor sum = Add(x_last, other.To(gpu_));
  EXPECT_EQ(sum.memory_format(), MemoryFormat::kChannelsLast);
  EXPECT_EQ(Values(sum), Values(Add(x, other)));
  const Tensor relu = ReluForward(x_last);
  EXPECT_EQ(relu.memory_format(), MemoryFormat::kChannelsLast);
  EXPECT_EQ(Values(ReluBackward(relu, other.To(gpu_))),
            Values(ReluBackward(ReluForward(x), other)));
  Tensor in_place = other.To(gpu_);
  AddInPlace(in_place, x_last);
  EXPECT_EQ(Values(in_place), Values(Add(other, x)));
  const Tensor flat = Flatten(x_last);
  EXPECT_EQ(Values(flat), Values(x));
}

// A training step on the GPU (convolution, ReLU, pooling, linear, loss,
// their backward, SGD) queues everything without the host waiting; only
// reading the loss waits, once. HostWaitsForGpus counts ringlet's own
// waits (pageable copies, which CUDA would make wait, are not used).
TEST_F(CudaOpsTest, ATrainingStepWaitsForTheGpuOnlyToReadTheLoss) {
  const Tensor x = Random({8, 3, 10, 10}, 90).To(gpu_);
  Tensor w = Random({6, 3, 3, 3}, 91).To(gpu_), b = Random({6}, 92).To(gpu_);
  Tensor lw = Random({6, 10}, 93).To(gpu_), lb = Random({10}, 94).To(gpu_);
  std::vector<int32_t> labels(8);
  for (int i = 0; i < 8; ++i) labels[i] = i % 10;
  SgdOptions sgd;
  sgd.lr = 0.1f;
  auto step = [&]() {
    const Tensor y = ReluForward(Conv2dForward(x, w, b, {1, 1}));
    const Tensor pooled = GlobalAvgPoolForward(y);
    const Tensor logits = LinearForward(pooled, lw, lb);
    PendingLoss loss =
        StartSoftmaxCrossEntropy(logits, labels.data(), Reduction::kMean);
    const LinearGrads lg = LinearBackward(pooled, lw, true, loss.dlogits());
    const Tensor dy = ReluBackward(y, GlobalAvgPoolBackward(y.shape(), lg.dx));
    const Conv2dGrads cg = Conv2dBackward(x, w, true, dy, {1, 1});
    SgdUpdate(w, cg.dw, nullptr, sgd);
    SgdUpdate(lw, lg.dw, nullptr, sgd);
    return loss;
  };
  step().Finish();  // The first step chooses the algorithms.
  const uint64_t before = HostWaitsForGpus();
  PendingLoss loss = step();
  EXPECT_EQ(HostWaitsForGpus() - before, 0u) << "the step made the host wait";
  const LossResult done = loss.Finish();
  EXPECT_EQ(HostWaitsForGpus() - before, 1u) << "reading the loss";
  EXPECT_TRUE(std::isfinite(done.loss));
  EXPECT_GT(done.loss, 0);
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

// Synchronised batch norm with one replica (a sum that changes nothing)
// is plain batch norm: the GPU's own kernels against the CPU op.
TEST_F(CudaOpsTest, SynchronisedBatchNormOfOneReplicaMatchesTheCpu) {
  ExpectBatchNormMatchesTheCpu(
      gpu_, [](double*, int64_t) {}, 1e-5f, 60);
}

// Sums vectors across `parties` threads, call by call (every thread makes
// the same calls): a stand-in for a collective, through host memory.
class HostRendezvousSum {
 public:
  explicit HostRendezvousSum(int parties) : parties_(parties) {}
  void Sum(std::vector<double>& values) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t generation = generation_;
    if (arrived_ == 0) total_.assign(values.size(), 0.0);
    for (size_t i = 0; i < values.size(); ++i) total_[i] += values[i];
    if (++arrived_ == parties_) {
      result_ = total_;
      arrived_ = 0;
      ++generation_;
      done_.notify_all();
    } else {
      done_.wait(lock, [&] { return generation_ != generation; });
    }
    values = result_;
  }

 private:
  const int parties_;
  std::mutex mu_;
  std::condition_variable done_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<double> total_, result_;
};

// A batch of 6 split 4 / 2 / 0 over three replicas on one GPU, each on its
// own thread, with sums across them: every replica normalises with the
// whole batch's statistics, so the pieces equal the CPU op on the whole
// batch (the empty replica takes part in every sum).
TEST_F(CudaOpsTest, SynchronisedBatchNormOverUnevenShardsEqualsTheWholeBatch) {
  const Tensor x = Random({6, 3, 5, 5}, 70), gamma = Random({3}, 71),
               beta = Random({3}, 72), dy = Random({6, 3, 5, 5}, 73);
  BatchNormStats stats{Tensor({3}), Tensor({3}), 0.1f, 1e-5f};
  stats.running_var.Fill(1.0f);
  BatchNormCache cache;
  const std::vector<float> y =
      Values(BatchNorm2dTrainForward(x, gamma, beta, &stats, &cache));
  const BatchNormGrads g = BatchNorm2dBackward(dy, gamma, cache);
  const std::vector<float> dx = Values(g.dx);

  const std::vector<int64_t> first = {0, 4, 6}, count = {4, 2, 0};
  const int64_t per_sample = 3 * 5 * 5;
  HostRendezvousSum host_sum(3);
  struct Result {
    std::vector<float> y, dx, dgamma, dbeta, running_mean, running_var;
    std::string error;
  };
  std::vector<Result> results(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      try {
        const ReplicaSum sum = [&](double* device_values, int64_t n) {
          std::vector<double> v(n);
          cudaMemcpy(v.data(), device_values, n * sizeof(double),
                     cudaMemcpyDeviceToHost);
          host_sum.Sum(v);
          cudaMemcpy(device_values, v.data(), n * sizeof(double),
                     cudaMemcpyHostToDevice);
        };
        auto piece = [&](const Tensor& t) {
          Tensor out({count[r], 3, 5, 5});
          std::copy(t.data() + first[r] * per_sample,
                    t.data() + (first[r] + count[r]) * per_sample, out.data());
          return out.To(gpu_);
        };
        BatchNormStats mine{Tensor({3}, gpu_), Tensor({3}, gpu_), 0.1f, 1e-5f};
        mine.running_var.Fill(1.0f);
        BatchNormCache my_cache;
        Result& out = results[r];
        out.y = Values(BatchNorm2dTrainForward(
            piece(x), gamma.To(gpu_), beta.To(gpu_), &mine, &my_cache, sum));
        const BatchNormGrads mine_g =
            BatchNorm2dBackward(piece(dy), gamma.To(gpu_), my_cache, sum);
        out.dx = Values(mine_g.dx);
        out.dgamma = Values(mine_g.dgamma);
        out.dbeta = Values(mine_g.dbeta);
        out.running_mean = Values(mine.running_mean);
        out.running_var = Values(mine.running_var);
      } catch (const std::exception& e) {
        results[r].error = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<float> dgamma(3, 0), dbeta(3, 0);
  for (int r = 0; r < 3; ++r) {
    const Result& got = results[r];
    ASSERT_EQ(got.error, "") << "replica " << r;
    const std::string what = "replica " + std::to_string(r);
    const auto from = first[r] * per_sample, to = from + count[r] * per_sample;
    ExpectClose(got.y, std::vector<float>(y.begin() + from, y.begin() + to),
                what + " forward", 1e-5f);
    ExpectClose(got.dx, std::vector<float>(dx.begin() + from, dx.begin() + to),
                what + " dx", 1e-5f);
    ExpectClose(got.running_mean, Values(stats.running_mean),
                what + " running mean", 1e-5f);
    ExpectClose(got.running_var, Values(stats.running_var),
                what + " running variance", 1e-5f);
    for (int ch = 0; ch < 3; ++ch) {
      dgamma[ch] += got.dgamma[ch];
      dbeta[ch] += got.dbeta[ch];
    }
  }
  // Each replica's share of dgamma and dbeta sums to the whole batch's.
  ExpectClose(dgamma, Values(g.dgamma), "dgamma summed", 1e-5f);
  ExpectClose(dbeta, Values(g.dbeta), "dbeta summed", 1e-5f);
}

}  // namespace
}  // namespace ringlet::nn
