// The two d2l models: parameter counts equal the chapter's, shapes, and the
// from-scratch LeNet's backward against finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "nn/layers/init.h"
#include "nn/models/lenet.h"
#include "nn/models/resnet.h"
#include "nn/ops/loss.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::ExpectGradientNear;
using testing::RandomTensor;

TEST(LeNet, HasTheChaptersParameterCount) {
  LeNetParams p = LeNetParams::Init(0);
  int64_t n = 0;
  for (const Tensor* t : p.All()) n += t->numel();
  EXPECT_EQ(n, 129068);
}

TEST(LeNet, BackwardMatchesFiniteDifferences) {
  LeNetParams p = LeNetParams::Init(3);
  // Weights of +-0.02 and positive biases keep every ReLU input well above
  // zero, so no kink lies within a finite-difference step and every element
  // can be checked exactly (ReLU's own masking is checked in dense_ops_test).
  for (Tensor* t : {&p.W1, &p.W2, &p.W3, &p.W4}) {
    const Tensor r = RandomTensor(t->shape(), t->numel(), -0.02f, 0.02f);
    for (int64_t i = 0; i < t->numel(); ++i) t->data()[i] = r.data()[i];
  }
  p.b1.Fill(1.0f);
  p.b2.Fill(1.0f);
  p.b3.Fill(2.0f);
  const Tensor x = RandomTensor({2, 1, 28, 28}, 4, 0.0f, 1.0f);
  const std::vector<int32_t> labels = {3, 7};
  LeNetActivations acts;
  const LossResult fwd = SoftmaxCrossEntropy(LeNetForward(p, x, &acts),
                                             labels.data(), Reduction::kSum);
  const LeNetParams g = LeNetBackward(p, acts, fwd.dlogits);
  const auto loss = [&] {
    LeNetActivations scratch;
    return SoftmaxCrossEntropy(LeNetForward(p, x, &scratch), labels.data(),
                               Reduction::kSum)
        .loss;
  };
  // Every element of every tensor but W2 and W3 (25,000 and 102,400
  // elements); those get a strided sample.
  ExpectGradientNear("W1", p.W1, g.W1, loss, 1e-2f, 3e-2);
  ExpectGradientNear("b1", p.b1, g.b1, loss, 1e-2f, 3e-2);
  ExpectGradientNear("b2", p.b2, g.b2, loss, 1e-2f, 3e-2);
  ExpectGradientNear("b3", p.b3, g.b3, loss, 1e-2f, 3e-2);
  ExpectGradientNear("W4", p.W4, g.W4, loss, 1e-2f, 3e-2);
  for (auto [value, grad, name] :
       {std::tuple{&p.W2, &g.W2, "W2"}, std::tuple{&p.W3, &g.W3, "W3"}}) {
    // One element in 97: a sample across every row and column.
    Tensor sample_value({(value->numel() + 96) / 97});
    for (int64_t i = 0; i < sample_value.numel(); ++i) {
      const int64_t at = i * 97;
      const float saved = value->data()[at];
      value->data()[at] = saved + 1e-2f;
      const double plus = loss();
      value->data()[at] = saved - 1e-2f;
      const double minus = loss();
      value->data()[at] = saved;
      const double numeric = (plus - minus) / 2e-2;
      EXPECT_NEAR(grad->data()[at], numeric,
                  3e-2 * std::max(1.0, std::fabs(numeric)))
          << name << "[" << at << "]";
    }
  }
  ExpectGradientNear("b4", p.b4, g.b4, loss, 1e-2f, 3e-2);
}

TEST(LeNet, CloneIsDeep) {
  LeNetParams p = LeNetParams::Init(1);
  LeNetParams q = p.Clone();
  q.W1.data()[0] += 1;
  EXPECT_NE(p.W1.data()[0], q.W1.data()[0]);
}

TEST(ResNet18, HasTheChaptersParameterAndStatisticCounts) {
  auto net = MakeResNet18();
  EXPECT_EQ(CountElements(net->Parameters()), 11175818);
  EXPECT_EQ(CountElements(net->Buffers()), 7808);
}

TEST(ResNet18, ForwardAndBackwardShapes) {
  auto net = MakeResNet18();
  InitParameters(*net, InitScheme::kNormal001, 5);
  const Tensor x = RandomTensor({2, 1, 28, 28}, 6, 0.0f, 1.0f);
  const Tensor y = net->Forward(x);
  EXPECT_EQ(y.shape(), (Shape{2, 10}));
  const Tensor dx = net->Backward(RandomTensor({2, 10}, 7));
  EXPECT_EQ(dx.shape(), x.shape());
  net->SetTraining(false);
  EXPECT_EQ(net->Forward(x).shape(), (Shape{2, 10}));
}

}  // namespace
}  // namespace ringlet::nn
