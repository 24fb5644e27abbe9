#include "nn/ops/conv2d.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "nn/compute_options.h"
#include "nn/ops/cpu_conv_backend.h"
#include "nn/ops/op_threads.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::ExpectGradientNear;
using testing::ExpectTensorNear;
using testing::Project;
using testing::RandomTensor;

// The definition, as seven loops.
Tensor Reference(const Tensor& x, const Tensor& w, const Tensor& b,
                 const Conv2dParams& prm) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t k = w.dim(0), r = w.dim(2), s = w.dim(3);
  const int64_t p = (h + 2 * prm.padding - r) / prm.stride + 1;
  const int64_t q = (wd + 2 * prm.padding - s) / prm.stride + 1;
  Tensor y({n, k, p, q});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < k; ++o)
      for (int64_t a = 0; a < p; ++a)
        for (int64_t bq = 0; bq < q; ++bq) {
          double sum = b.defined() ? b.data()[o] : 0.0;
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t u = 0; u < r; ++u)
              for (int64_t v = 0; v < s; ++v) {
                const int64_t hi = a * prm.stride - prm.padding + u;
                const int64_t wi = bq * prm.stride - prm.padding + v;
                if (hi < 0 || hi >= h || wi < 0 || wi >= wd) continue;
                sum += x.data()[((i * c + ch) * h + hi) * wd + wi] *
                       w.data()[((o * c + ch) * r + u) * s + v];
              }
          y.data()[((i * k + o) * p + a) * q + bq] = static_cast<float>(sum);
        }
  return y;
}

struct Case {
  Shape x, w;
  int stride, padding;
  bool bias;
};

const Case kCases[] = {
    {{2, 1, 6, 6}, {3, 1, 3, 3}, 1, 0, true},   // LeNet-like
    {{1, 2, 5, 7}, {4, 2, 3, 3}, 2, 1, true},   // stride and padding
    {{3, 3, 4, 4}, {2, 3, 1, 1}, 1, 0, false},  // 1x1, batch 3, no bias
    {{1, 2, 5, 5}, {2, 2, 5, 5}, 1, 0, true},   // kernel = input
    {{2, 2, 7, 6}, {3, 2, 3, 2}, 3, 2, true},   // odd sizes, big padding
};

// Every test runs on both CPU convolutions: oneDNN (the default) and Eigen.
class Conv2d : public ::testing::TestWithParam<CpuConvBackend> {
 protected:
  void SetUp() override {
    ComputeOptions options = CurrentComputeOptions();
    options.cpu_conv = GetParam();
    scope_ = std::make_unique<ComputeScope>(options);
  }
  void TearDown() override { scope_.reset(); }
  std::unique_ptr<ComputeScope> scope_;
};

INSTANTIATE_TEST_SUITE_P(
    Backends, Conv2d,
    ::testing::Values(CpuConvBackend::kOneDnn, CpuConvBackend::kEigen),
    [](const ::testing::TestParamInfo<CpuConvBackend>& info) {
      return std::string(CpuConvBackendName(info.param));
    });

TEST_P(Conv2d, ForwardMatchesTheDefinition) {
  uint64_t seed = 1;
  for (const Case& c : kCases) {
    const Tensor x = RandomTensor(c.x, seed++), w = RandomTensor(c.w, seed++);
    const Tensor b = c.bias ? RandomTensor({c.w[0]}, seed++) : Tensor();
    const Conv2dParams prm{c.stride, c.padding};
    ExpectTensorNear("conv2d " + ToString(c.x) + " * " + ToString(c.w),
                     Conv2dForward(x, w, b, prm), Reference(x, w, b, prm),
                     1e-5);
  }
}

TEST_P(Conv2d, GradientsMatchFiniteDifferences) {
  uint64_t seed = 100;
  for (const Case& c : kCases) {
    Tensor x = RandomTensor(c.x, seed++), w = RandomTensor(c.w, seed++);
    Tensor b = c.bias ? RandomTensor({c.w[0]}, seed++) : Tensor();
    const Conv2dParams prm{c.stride, c.padding};
    const Tensor y = Conv2dForward(x, w, b, prm);
    const Tensor r = RandomTensor(y.shape(), seed++);
    const Conv2dGrads g = Conv2dBackward(x, w, c.bias, r, prm);
    const auto loss = [&] { return Project(Conv2dForward(x, w, b, prm), r); };
    const std::string name = "conv2d " + ToString(c.x) + " * " + ToString(c.w);
    ExpectGradientNear(name + " dx", x, g.dx, loss);
    ExpectGradientNear(name + " dw", w, g.dw, loss);
    if (c.bias) ExpectGradientNear(name + " db", b, g.db, loss);
  }
}

// Image i of a batch, as a batch of one.
Tensor Slice(const Tensor& t, int64_t i) {
  Shape one = t.shape();
  one[0] = 1;
  const int64_t size = t.numel() / t.dim(0);
  Tensor out(one);
  std::copy(t.data() + i * size, t.data() + (i + 1) * size, out.data());
  return out;
}

// 9 images of 16x16 outputs go through the matrix products in groups (of 4,
// 4 and 1 here); each image's results must be what it gets alone.
TEST_P(Conv2d, GroupedImagesMatchImagesOneAtATime) {
  const Tensor x = RandomTensor({9, 2, 16, 16}, 11),
               w = RandomTensor({3, 2, 3, 3}, 12);
  const Tensor b = RandomTensor({3}, 13), dy = RandomTensor({9, 3, 16, 16}, 14);
  const Conv2dParams prm{1, 1};
  for (int threads : {1, 2, 3}) {
    const auto threads2 = ScopedCompute(&ComputeOptions::op_threads, threads);
    const std::string t = " with " + std::to_string(threads) + " threads";
    ExpectTensorNear("y" + t, Conv2dForward(x, w, b, prm),
                     Reference(x, w, b, prm), 1e-5);
    const Conv2dGrads all = Conv2dBackward(x, w, true, dy, prm);
    Tensor dw({3, 2, 3, 3}), db({3});
    for (int64_t i = 0; i < 9; ++i) {
      const Conv2dGrads one =
          Conv2dBackward(Slice(x, i), w, true, Slice(dy, i), prm);
      ExpectTensorNear("dx of image " + std::to_string(i) + t, Slice(all.dx, i),
                       one.dx, 1e-6);
      for (int64_t j = 0; j < dw.numel(); ++j) dw.data()[j] += one.dw.data()[j];
      for (int64_t j = 0; j < 3; ++j) db.data()[j] += one.db.data()[j];
    }
    ExpectTensorNear("dw" + t, all.dw, dw, 1e-4);
    ExpectTensorNear("db" + t, all.db, db, 1e-4);
  }
}

TEST_P(Conv2d, ThreadsGiveTheSameResults) {
  const Tensor x = RandomTensor({5, 3, 7, 7}, 1),
               w = RandomTensor({4, 3, 3, 3}, 2);
  const Tensor b = RandomTensor({4}, 3), dy = RandomTensor({5, 4, 4, 4}, 4);
  const Conv2dParams prm{2, 1};
  const auto threads3 = ScopedCompute(&ComputeOptions::op_threads, 1);
  const Tensor y1 = Conv2dForward(x, w, b, prm);
  const Conv2dGrads g1 = Conv2dBackward(x, w, true, dy, prm);
  for (int threads : {2, 3, 8}) {
    const auto threads4 = ScopedCompute(&ComputeOptions::op_threads, threads);
    ExpectTensorNear("y", Conv2dForward(x, w, b, prm), y1, 0);
    const Conv2dGrads g = Conv2dBackward(x, w, true, dy, prm);
    ExpectTensorNear("dx", g.dx, g1.dx, 0);
    ExpectTensorNear("dw", g.dw, g1.dw, 1e-6);  // Summed in another grouping.
    ExpectTensorNear("db", g.db, g1.db, 1e-6);
  }
  const auto threads5 = ScopedCompute(&ComputeOptions::op_threads, 1);
  EXPECT_THROW(ScopedCompute(&ComputeOptions::op_threads, 0),
               std::invalid_argument);
}

TEST_P(Conv2d, WithoutDxTheOtherGradientsAreUnchanged) {
  const Tensor x = RandomTensor({2, 2, 5, 5}, 1),
               w = RandomTensor({3, 2, 3, 3}, 2);
  const Tensor dy = RandomTensor({2, 3, 3, 3}, 3);
  const Conv2dGrads all = Conv2dBackward(x, w, true, dy, {});
  const Conv2dGrads some = Conv2dBackward(x, w, true, dy, {}, false);
  EXPECT_FALSE(some.dx.defined());
  ExpectTensorNear("dw", some.dw, all.dw, 0);
  ExpectTensorNear("db", some.db, all.db, 0);
}

TEST_P(Conv2d, BadShapesAreNamed) {
  const Tensor x({1, 3, 4, 4});
  const auto error = [&](const Tensor& w, Conv2dParams prm) -> std::string {
    try {
      Conv2dForward(x, w, Tensor(), prm);
    } catch (const ShapeError& e) {
      return e.what();
    }
    return "no error";
  };
  using ::testing::HasSubstr;
  EXPECT_THAT(error(Tensor({2, 2, 3, 3}), {}),
              HasSubstr("conv2d: weight has shape [2, 2, 3, 3], expected "
                        "[*, 3, *, *]"));
  EXPECT_THAT(error(Tensor({2, 3, 5, 5}), {}),
              HasSubstr("5x5 kernel does not fit the 4x4 input"));
  EXPECT_THAT(error(Tensor({2, 3, 3, 3}), {0, 0}), HasSubstr("stride 0"));
  EXPECT_THAT(error(Tensor({2, 3, 3, 3}), {1, -1}), HasSubstr("padding -1"));
  EXPECT_THROW(
      Conv2dForward(Tensor({4, 4}), Tensor({2, 3, 3, 3}), Tensor(), {}),
      ShapeError);
}

}  // namespace
}  // namespace ringlet::nn
