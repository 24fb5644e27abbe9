// oneDNN's CPU convolutions against Eigen's, the portable reference, on the
// shapes of the d2l models at batch sizes that leave a partial chunk of
// images (nn/ops/onednn/conv2d_onednn.cc cuts batches into chunks).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nn/compute_options.h"
#include "nn/ops/activation.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/cpu_conv_backend.h"
#include "nn/ops/onednn/conv2d_onednn.h"
#include "nn/ops/onednn/conv_plans.h"
#include "nn/ops/op_threads.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::ExpectTensorNear;
using testing::RandomTensor;

struct ModelShape {
  const char* name;
  Shape x, w;
  int stride, padding;
  bool bias, need_dx;
};

const ModelShape kShapes[] = {
    {"lenet conv1", {33, 1, 28, 28}, {6, 1, 5, 5}, 1, 2, true, false},
    {"lenet conv2", {33, 6, 14, 14}, {16, 6, 5, 5}, 1, 0, true, true},
    // The scratch chapter's LeNet (train_bench, lenet_scratch).
    {"lenet scratch conv1", {33, 1, 28, 28}, {20, 1, 3, 3}, 1, 0, true, false},
    {"lenet scratch conv2", {33, 20, 13, 13}, {50, 20, 5, 5}, 1, 0, true, true},
    {"resnet stem", {17, 1, 28, 28}, {64, 1, 3, 3}, 1, 1, true, true},
    {"resnet block1", {17, 64, 28, 28}, {64, 64, 3, 3}, 1, 1, true, true},
    {"resnet block2 down", {17, 64, 28, 28}, {128, 64, 3, 3}, 2, 1, true, true},
    {"resnet block2 1x1", {17, 64, 28, 28}, {128, 64, 1, 1}, 2, 0, true, true},
    {"resnet block2", {17, 128, 14, 14}, {128, 128, 3, 3}, 1, 1, true, true},
    {"resnet block3 1x1",
     {17, 128, 14, 14},
     {256, 128, 1, 1},
     2,
     0,
     true,
     true},
    {"resnet block4 1x1", {17, 256, 7, 7}, {512, 256, 1, 1}, 2, 0, true, true},
    {"resnet block4 down", {17, 256, 7, 7}, {512, 256, 3, 3}, 2, 1, true, true},
    {"resnet block4", {17, 512, 4, 4}, {512, 512, 3, 3}, 1, 1, false, true},
};

Conv2dGrads Backward(CpuConvBackend backend, const ModelShape& m,
                     const Tensor& x, const Tensor& w, const Tensor& dy) {
  const auto conv_backend = ScopedCompute(&ComputeOptions::cpu_conv, backend);
  return Conv2dBackward(x, w, m.bias, dy, {m.stride, m.padding}, m.need_dx);
}

TEST(Conv2dBackends, OneDnnMatchesEigenOnTheModelsShapes) {
  const auto threads2 = ScopedCompute(&ComputeOptions::op_threads, 2);
  uint64_t seed = 7;
  for (const ModelShape& m : kShapes) {
    const Tensor x = RandomTensor(m.x, seed++), w = RandomTensor(m.w, seed++);
    const Tensor b = m.bias ? RandomTensor({m.w[0]}, seed++) : Tensor();
    const Conv2dParams prm{m.stride, m.padding};
    const auto conv_backend2 =
        ScopedCompute(&ComputeOptions::cpu_conv, CpuConvBackend::kEigen);
    const Tensor y_eigen = Conv2dForward(x, w, b, prm);
    const auto conv_backend3 =
        ScopedCompute(&ComputeOptions::cpu_conv, CpuConvBackend::kOneDnn);
    const Tensor y_onednn = Conv2dForward(x, w, b, prm);
    // Float32 sums of up to C R S = 4608 products, in other orders.
    ExpectTensorNear(std::string(m.name) + " y", y_onednn, y_eigen, 1e-4);
    const Tensor dy = RandomTensor(y_eigen.shape(), seed++);
    const Conv2dGrads eigen = Backward(CpuConvBackend::kEigen, m, x, w, dy);
    const Conv2dGrads onednn = Backward(CpuConvBackend::kOneDnn, m, x, w, dy);
    EXPECT_EQ(onednn.dx.defined(), m.need_dx) << m.name;
    if (m.need_dx) {
      ExpectTensorNear(std::string(m.name) + " dx", onednn.dx, eigen.dx, 1e-4);
    }
    // Weight gradients sum N P Q products of values in [-1, 1] (13,328 for
    // block1): partial sums reach ~100, so float32 rounding in another order
    // (oneDNN runs a thread's images in one call) differs by up to ~1e-3.
    ExpectTensorNear(std::string(m.name) + " dw", onednn.dw, eigen.dw, 1e-3);
    if (m.bias) {
      ExpectTensorNear(std::string(m.name) + " db", onednn.db, eigen.db, 1e-3);
    }
  }
  const auto conv_backend4 =
      ScopedCompute(&ComputeOptions::cpu_conv, CpuConvBackend::kOneDnn);
}

// Conv2dReluForward is ReluForward after Conv2dForward, bit for bit (the
// signs of zeros too), through oneDNN's post-op and through Eigen, in
// float32 and, where this CPU has oneDNN's bfloat16 kernels, in bfloat16;
// on every model shape (blocked, NHWC and plain layouts are all chosen
// among them).
TEST(Conv2dBackends, ReluForwardIsTheSeparateReluBitForBit) {
  const auto threads3 = ScopedCompute(&ComputeOptions::op_threads, 2);
  uint64_t seed = 50;
  std::vector<DType> types = {DType::kFloat32};
  if (onednn::SupportsBf16()) types.push_back(DType::kBFloat16);
  for (const ModelShape& m : kShapes) {
    const Tensor x = RandomTensor(m.x, seed++), w = RandomTensor(m.w, seed++);
    const Tensor b = m.bias ? RandomTensor({m.w[0]}, seed++) : Tensor();
    const Conv2dParams prm{m.stride, m.padding};
    for (CpuConvBackend backend :
         {CpuConvBackend::kOneDnn, CpuConvBackend::kEigen}) {
      const auto conv_backend5 =
          ScopedCompute(&ComputeOptions::cpu_conv, backend);
      for (DType type : types) {
        const Tensor xt = x.To(type), wt = w.To(type);
        const Tensor fused = Conv2dReluForward(xt, wt, b, prm);
        const Tensor separate = ReluForward(Conv2dForward(xt, wt, b, prm));
        const std::string what =
            std::string(m.name) + " " + ToString(type) +
            (backend == CpuConvBackend::kOneDnn ? " onednn" : " eigen");
        ASSERT_EQ(fused.dtype(), separate.dtype()) << what;
        ASSERT_EQ(fused.shape(), separate.shape()) << what;
        EXPECT_EQ(
            std::memcmp(fused.raw_data(), separate.raw_data(), fused.nbytes()),
            0)
            << what;
      }
    }
  }
  const auto conv_backend6 =
      ScopedCompute(&ComputeOptions::cpu_conv, CpuConvBackend::kOneDnn);
}

// Chunks of images are fixed by the shapes, so oneDNN's output and input
// gradient are the same bits at every thread count.
TEST(Conv2dBackends, OneDnnOutputAndInputGradientIgnoreTheThreadCount) {
  const auto conv_backend7 =
      ScopedCompute(&ComputeOptions::cpu_conv, CpuConvBackend::kOneDnn);
  const Tensor x = RandomTensor({37, 16, 14, 14}, 1),
               w = RandomTensor({32, 16, 3, 3}, 2), b = RandomTensor({32}, 3);
  const Tensor dy = RandomTensor({37, 32, 7, 7}, 4);
  const Conv2dParams prm{2, 1};
  const auto threads4 = ScopedCompute(&ComputeOptions::op_threads, 1);
  const Tensor y1 = Conv2dForward(x, w, b, prm);
  const Conv2dGrads g1 = Conv2dBackward(x, w, true, dy, prm);
  for (int threads : {2, 3, 5, 16}) {
    const auto threads5 = ScopedCompute(&ComputeOptions::op_threads, threads);
    const std::string t = " with " + std::to_string(threads) + " threads";
    ExpectTensorNear("y" + t, Conv2dForward(x, w, b, prm), y1, 0);
    const Conv2dGrads g = Conv2dBackward(x, w, true, dy, prm);
    ExpectTensorNear("dx" + t, g.dx, g1.dx, 0);
    // Each thread sums its run of images, then the runs are added in
    // thread order: 1,813 products per weight here, grouped otherwise, so
    // float32 rounding differs (partial sums reach ~40).
    ExpectTensorNear("dw" + t, g.dw, g1.dw, 1e-4);
    ExpectTensorNear("db" + t, g.db, g1.db, 1e-4);
  }
}

// ResNet-18's 4x4 stage takes its weight gradient as group products
// (nn/ops/onednn/conv_gemm.h); the same with oneDNN's primitives alone.
TEST(Conv2dBackends, GroupGemmWeightGradientMatchesThePrimitives) {
  const auto conv_backend8 =
      ScopedCompute(&ComputeOptions::cpu_conv, CpuConvBackend::kOneDnn);
  const Tensor x = RandomTensor({19, 512, 4, 4}, 1),
               w = RandomTensor({512, 512, 3, 3}, 2);
  const Tensor dy = RandomTensor({19, 512, 4, 4}, 3);
  for (int threads : {1, 2}) {
    const auto threads6 = ScopedCompute(&ComputeOptions::op_threads, threads);
    const Conv2dGrads group = Conv2dBackward(x, w, false, dy, {1, 1});
    onednn::AllowGroupGemm(false);
    const Conv2dGrads primitives = Conv2dBackward(x, w, false, dy, {1, 1});
    onednn::AllowGroupGemm(true);
    ExpectTensorNear("dw", group.dw, primitives.dw, 1e-3);
    ExpectTensorNear("dx", group.dx, primitives.dx, 0);
  }
}

TEST(Conv2dBackends, NamesParseAndBadNamesSayWhatIsAccepted) {
  EXPECT_EQ(ParseCpuConvBackend("onednn"), CpuConvBackend::kOneDnn);
  EXPECT_EQ(ParseCpuConvBackend("eigen"), CpuConvBackend::kEigen);
  EXPECT_STREQ(CpuConvBackendName(CpuConvBackend::kEigen), "eigen");
  try {
    ParseCpuConvBackend("mkl");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("'mkl'; use onednn or eigen"));
  }
}

}  // namespace
}  // namespace ringlet::nn
