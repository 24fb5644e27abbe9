// Linear, ReLU, pooling, add and flatten: forward against loops, backward
// against finite differences, bad shapes against their messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "nn/compute_options.h"
#include "nn/ops/activation.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/linear.h"
#include "nn/ops/non_finite.h"
#include "nn/ops/op_threads.h"
#include "nn/ops/pooling.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::ExpectGradientNear;
using testing::ExpectTensorNear;
using ::testing::HasSubstr;
using testing::Project;
using testing::RandomTensor;

TEST(Elementwise, DivideInPlaceAndCountNonFinite) {
  Tensor x = Tensor::FromVector({5}, {1, -2, 0.5f, 4, 8});
  DivideInPlace(x, -2.0f);
  EXPECT_THAT(std::vector<float>(x.data(), x.data() + 5),
              ::testing::ElementsAre(-0.5f, 1, -0.25f, -2, -4));
  EXPECT_EQ(CountNonFinite({&x}), 0);
  Tensor y = Tensor::FromVector({3}, {std::nanf(""), INFINITY, 1});
  EXPECT_EQ(CountNonFinite({&x, &y}), 2);
  EXPECT_EQ(CountNonFinite({}), 0);
}

TEST(Elementwise, AddScaledInPlaceAddsAMultiple) {
  Tensor a = Tensor::FromVector({3}, {1, 2, 3});
  AddScaledInPlace(a, Tensor::FromVector({3}, {4, -2, 0.5f}), -0.5f);
  EXPECT_THAT(std::vector<float>(a.data(), a.data() + 3),
              ::testing::ElementsAre(-1, 3, 2.75f));
  EXPECT_THROW(AddScaledInPlace(a, Tensor({2}), 1.0f), ShapeError);
}

TEST(Elementwise, ZeroAllZeroesEveryTensor) {
  Tensor a = Tensor::FromVector({2}, {1, 2});
  Tensor b = Tensor::FromVector({1}, {3});
  ZeroAll({&a, &b});
  EXPECT_THAT(std::vector<float>(a.data(), a.data() + 2),
              ::testing::ElementsAre(0, 0));
  EXPECT_EQ(b.data()[0], 0.0f);
  ZeroAll({});
}

TEST(Elementwise, NonFiniteCountsArePerTensor) {
  const Tensor a = Tensor::FromVector({2}, {1, 2});
  const Tensor b = Tensor::FromVector({3}, {std::nanf(""), -INFINITY, 1});
  const NonFiniteCounts counts = QueueCountNonFinite({&a, &b, &a});
  EXPECT_THAT(counts.Read(), ::testing::ElementsAre(0, 2, 0));
  EXPECT_EQ(counts.FirstBad(), 1);
  EXPECT_EQ(counts.device_total(), nullptr);  // On a CPU.
  const NonFiniteCounts clean = QueueCountNonFinite({&a});
  EXPECT_EQ(clean.FirstBad(), -1);
  EXPECT_EQ(NonFiniteCounts().FirstBad(), -1);
}

TEST(Elementwise, ScaleInPlaceAndSumOfSquares) {
  Tensor x = Tensor::FromVector({4}, {1, -2, 0.5f, 4});
  ScaleInPlace(x, 0.5f);
  EXPECT_THAT(std::vector<float>(x.data(), x.data() + 4),
              ::testing::ElementsAre(0.5f, -1, 0.25f, 2));
  const Tensor y = Tensor::FromVector({2}, {3, -4});
  EXPECT_DOUBLE_EQ(SumOfSquares({&x, &y}), 0.25 + 1 + 0.0625 + 4 + 9 + 16);
  EXPECT_EQ(SumOfSquares({}), 0.0);
}

TEST(Linear, ForwardAndGradients) {
  for (int64_t n : {1, 3, 8}) {
    for (bool bias : {true, false}) {
      Tensor x = RandomTensor({n, 5}, n), w = RandomTensor({5, 4}, n + 10);
      Tensor b = bias ? RandomTensor({4}, n + 20) : Tensor();
      Tensor expected({n, 4});
      for (int64_t i = 0; i < n; ++i)
        for (int64_t o = 0; o < 4; ++o) {
          double s = bias ? b.data()[o] : 0.0;
          for (int64_t k = 0; k < 5; ++k) {
            s += x.data()[i * 5 + k] * w.data()[k * 4 + o];
          }
          expected.data()[i * 4 + o] = static_cast<float>(s);
        }
      const Tensor y = LinearForward(x, w, b);
      ExpectTensorNear("linear", y, expected);
      const Tensor r = RandomTensor(y.shape(), 99);
      const LinearGrads g = LinearBackward(x, w, bias, r);
      const auto loss = [&] { return Project(LinearForward(x, w, b), r); };
      ExpectGradientNear("linear dx", x, g.dx, loss);
      ExpectGradientNear("linear dw", w, g.dw, loss);
      if (bias) ExpectGradientNear("linear db", b, g.db, loss);
    }
  }
}

TEST(Linear, BadShapes) {
  try {
    LinearForward(Tensor({2, 3}), Tensor({4, 5}), Tensor());
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("linear: input has shape [2, 3], expected [*, 4]"));
  }
  EXPECT_THROW(LinearForward(Tensor({2, 4}), Tensor({4, 5}), Tensor({4})),
               ShapeError);
}

TEST(Relu, ForwardAndGradient) {
  // Values kept away from 0, where ReLU has its kink.
  Tensor x = RandomTensor({3, 7}, 5);
  for (int64_t i = 0; i < x.numel(); ++i) {
    float& v = x.data()[i];
    v = v >= 0 ? v + 0.1f : v - 0.1f;
  }
  const Tensor y = ReluForward(x);
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(y.data()[i], x.data()[i] > 0 ? x.data()[i] : 0.0f);
  }
  const Tensor r = RandomTensor(y.shape(), 6);
  ExpectGradientNear("relu dx", x, ReluBackward(y, r),
                     [&] { return Project(ReluForward(x), r); });
}

TEST(AvgPool2d, ForwardAndGradient) {
  struct Case {
    Shape x;
    int kernel, stride;
  };
  // 2x2 stride 2 (LeNet's) has its own loop; 7x7 leaves a row and a
  // column out.
  for (const Case& c : {Case{{2, 3, 6, 6}, 2, 2}, Case{{2, 3, 7, 7}, 2, 2},
                        Case{{1, 2, 5, 7}, 3, 1}, Case{{3, 1, 5, 5}, 2, 3}}) {
    Tensor x = RandomTensor(c.x, 7);
    const Tensor y = AvgPool2dForward(x, c.kernel, c.stride);
    const int64_t p = (c.x[2] - c.kernel) / c.stride + 1;
    const int64_t q = (c.x[3] - c.kernel) / c.stride + 1;
    ASSERT_EQ(y.shape(), (Shape{c.x[0], c.x[1], p, q}));
    for (int64_t plane = 0; plane < c.x[0] * c.x[1]; ++plane)
      for (int64_t i = 0; i < p; ++i)
        for (int64_t j = 0; j < q; ++j) {
          double s = 0;
          for (int u = 0; u < c.kernel; ++u)
            for (int v = 0; v < c.kernel; ++v) {
              s += x.data()[(plane * c.x[2] + i * c.stride + u) * c.x[3] +
                            j * c.stride + v];
            }
          EXPECT_NEAR(y.data()[(plane * p + i) * q + j],
                      s / (c.kernel * c.kernel), 1e-6);
        }
    const Tensor r = RandomTensor(y.shape(), 8);
    ExpectGradientNear(
        "avgpool dx", x, AvgPool2dBackward(x.shape(), r, c.kernel, c.stride),
        [&] { return Project(AvgPool2dForward(x, c.kernel, c.stride), r); });
  }
  try {
    AvgPool2dForward(Tensor({1, 1, 3, 3}), 4, 1);
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("avgpool2d: a 4x4 window does not fit"));
  }
  EXPECT_THROW(AvgPool2dForward(Tensor({1, 1, 3, 3}), 2, 0), ShapeError);
}

// Disjoint windows write dx without a zeroed tensor; what they miss must
// still be zero, whatever the memory held before.
TEST(AvgPool2d, GradientIsZeroWhereNoWindowReaches) {
  for (int kernel : {2, 1}) {  // the unrolled 2x2 and the general loop
    const int stride = 2;
    const Shape xs{2, 3, 7, 7};  // 2x2 misses the last row and column
    const int64_t p = (7 - kernel) / stride + 1;
    const Tensor dy = RandomTensor({2, 3, p, p}, 41, 1.0f, 2.0f);
    for (int attempt = 0; attempt < 3; ++attempt) {
      {
        Tensor garbage = Tensor::Uninitialized(xs);
        garbage.Fill(std::nanf(""));
      }  // freed: the next tensor of this size may get its memory
      const Tensor dx = AvgPool2dBackward(xs, dy, kernel, stride);
      for (int64_t plane = 0; plane < 6; ++plane) {
        for (int64_t i = 0; i < 7; ++i) {
          for (int64_t j = 0; j < 7; ++j) {
            const bool reached = i / stride < p && j / stride < p &&
                                 i % stride < kernel && j % stride < kernel;
            const float expected =
                reached ? dy.data()[(plane * p + i / stride) * p + j / stride] *
                              (1.0f / (kernel * kernel))
                        : 0.0f;
            ASSERT_EQ(dx.data()[(plane * 7 + i) * 7 + j], expected)
                << "kernel " << kernel << " plane " << plane << " at " << i
                << "," << j;
          }
        }
      }
    }
  }
}

// Planes are split over threads; results must not change.
TEST(AvgPool2d, ThreadsGiveTheSameBits) {
  const Tensor x = RandomTensor({8, 40, 10, 10}, 31);  // 320 planes
  const Tensor dy = RandomTensor({8, 40, 5, 5}, 32);
  const auto threads2 = ScopedCompute(&ComputeOptions::op_threads, 1);
  const Tensor y1 = AvgPool2dForward(x, 2, 2);
  const Tensor dx1 = AvgPool2dBackward(x.shape(), dy, 2, 2);
  for (int threads : {2, 3}) {
    const auto threads3 = ScopedCompute(&ComputeOptions::op_threads, threads);
    ExpectTensorNear("y", AvgPool2dForward(x, 2, 2), y1, 0);
    ExpectTensorNear("dx", AvgPool2dBackward(x.shape(), dy, 2, 2), dx1, 0);
  }
}

TEST(GlobalAvgPool, ForwardAndGradient) {
  Tensor x = RandomTensor({2, 3, 4, 5}, 9);
  const Tensor y = GlobalAvgPoolForward(x);
  ASSERT_EQ(y.shape(), (Shape{2, 3}));
  for (int64_t plane = 0; plane < 6; ++plane) {
    double s = 0;
    for (int j = 0; j < 20; ++j) s += x.data()[plane * 20 + j];
    EXPECT_NEAR(y.data()[plane], s / 20, 1e-6);
  }
  const Tensor r = RandomTensor(y.shape(), 10);
  ExpectGradientNear("global avg pool dx", x,
                     GlobalAvgPoolBackward(x.shape(), r),
                     [&] { return Project(GlobalAvgPoolForward(x), r); });
}

TEST(Elementwise, AddAndFlatten) {
  const Tensor a = RandomTensor({2, 3}, 11), b = RandomTensor({2, 3}, 12);
  const Tensor s = Add(a, b);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(s.data()[i], a.data()[i] + b.data()[i]);
  Tensor acc = a.Clone();
  AddInPlace(acc, b);
  ExpectTensorNear("add in place", acc, s, 0);
  EXPECT_THROW(Add(a, Tensor({3, 2})), ShapeError);
  const Tensor f = Flatten(Tensor({4, 2, 3, 5}));
  EXPECT_EQ(f.shape(), (Shape{4, 30}));
}

// Split over threads on large tensors; each element is its own result.
TEST(Relu, ThreadsGiveTheSameValues) {
  const Tensor x = RandomTensor({3, 100001}, 81),
               dy = RandomTensor({3, 100001}, 82);
  const auto threads4 = ScopedCompute(&ComputeOptions::op_threads, 1);
  const Tensor y1 = ReluForward(x), dx1 = ReluBackward(y1, dy);
  const auto threads5 = ScopedCompute(&ComputeOptions::op_threads, 3);
  const Tensor y3 = ReluForward(x), dx3 = ReluBackward(y3, dy);
  const auto threads6 = ScopedCompute(&ComputeOptions::op_threads, 1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(y3.data()[i], x.data()[i] > 0 ? x.data()[i] : 0.0f) << i;
    ASSERT_EQ(y3.data()[i], y1.data()[i]) << i;
    ASSERT_EQ(dx3.data()[i], dx1.data()[i]) << i;
  }
}

}  // namespace
}  // namespace ringlet::nn
