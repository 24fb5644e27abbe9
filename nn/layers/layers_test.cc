// Modules: gradients of whole modules against finite differences (every
// parameter and the input), naming, modes and their errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "nn/compute_options.h"
#include "nn/layers/activations.h"
#include "nn/layers/containers.h"
#include "nn/layers/init.h"
#include "nn/layers/max_pool2d.h"
#include "nn/ops/autocast.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/conv2d.h"
#include "nn/tensor.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::ExpectGradientNear;
using ::testing::HasSubstr;
using testing::Project;
using testing::RandomTensor;

// Checks d loss / d input and / d every parameter of `module` at `x`.
void CheckModuleGradients(const std::string& name, Module& module, Tensor x,
                          uint64_t seed, double tolerance = 2e-2) {
  module.SetTraining(true);
  const Tensor y = module.Forward(x);
  const Tensor r = RandomTensor(y.shape(), seed);
  module.ZeroGrad();
  const Tensor dx = module.Backward(r);
  const auto loss = [&] { return Project(module.Forward(x), r); };
  ExpectGradientNear(name + " dx", x, dx, loss, 1e-2f, tolerance);
  for (Parameter* p : module.Parameters()) {
    const Tensor grad = p->grad.Clone();
    ExpectGradientNear(name + " " + p->name, p->value, grad, loss, 1e-2f,
                       tolerance);
  }
}

// Batch norm shifts of +5 keep every ReLU input in a Residual far above
// zero, so no kink lies within a finite-difference step and every element
// is checked exactly (ReLU's masking has its own test in dense_ops_test).
void ShiftBatchNorms(Module& m) {
  for (Parameter* p : m.Parameters()) {
    if (p->name.size() >= 4 && p->name.substr(p->name.size() - 4) == "beta") {
      p->value.Fill(5.0f);
    }
  }
}

TEST(Layers, ResidualGradientsWithAndWithoutShortcutConv) {
  Residual plain(3, 3, false, 1);
  InitParameters(plain, InitScheme::kKaimingNormal, 1);
  ShiftBatchNorms(plain);
  CheckModuleGradients("residual", plain, RandomTensor({2, 3, 5, 5}, 2), 3);
  Residual strided(2, 4, true, 2);
  InitParameters(strided, InitScheme::kKaimingNormal, 4);
  ShiftBatchNorms(strided);
  CheckModuleGradients("residual 1x1 stride 2", strided,
                       RandomTensor({3, 2, 6, 6}, 5), 6);
}

// Two copies of a module with the same values: `b` with its convolution
// biases folded into the batch norms that follow them.
void CopyValues(Module& from, Module& to) {
  const std::vector<Parameter*> a = from.Parameters(), b = to.Parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) b[i]->value = a[i]->value.Clone();
  const std::vector<Buffer*> c = from.Buffers(), d = to.Buffers();
  ASSERT_EQ(c.size(), d.size());
  for (size_t i = 0; i < c.size(); ++i) {
    CopyElements(c[i]->value, 0, d[i]->value, 0, c[i]->value.numel());
  }
}

void ExpectNear(const Tensor& got, const Tensor& want, double tol,
                const std::string& what) {
  EXPECT_LE(testing::LargestDifference(got, want),
            tol * testing::LargestMagnitude(want) + 1e-7)
      << what;
}

// A bias before a batch norm, folded into it: training outputs, the input
// gradient, every other gradient and the running statistics are the
// unfolded unit's up to rounding, evaluation too, and the folded biases'
// gradients are exactly zero (the unfolded ones are rounding noise).
TEST(Layers, AFoldedConvBiasGivesTheUnfoldedNumbers) {
  Residual plain(3, 5, true, 2), folded(3, 5, true, 2);
  InitParameters(plain, InitScheme::kKaimingNormal, 11);
  for (Parameter* p : plain.Parameters()) {
    if (p->name.find("bias") != std::string::npos) {
      p->value = RandomTensor(p->value.shape(), 12);  // Far from zero.
    }
  }
  CopyValues(plain, folded);
  EXPECT_EQ(FoldConvBiasesIntoBatchNorms(folded), 2);  // Not the 1x1 conv3.
  EXPECT_EQ(FoldConvBiasesIntoBatchNorms(folded), 0);  // Once.
  plain.SetTraining(true);
  folded.SetTraining(true);
  for (int step = 0; step < 2; ++step) {
    const Tensor x = RandomTensor({4, 3, 6, 6}, 13 + step);
    const Tensor dy = RandomTensor({4, 5, 3, 3}, 15 + step);
    ExpectNear(folded.Forward(x), plain.Forward(x), 1e-5, "forward");
    plain.ZeroGrad();
    folded.ZeroGrad();
    ExpectNear(folded.Backward(dy), plain.Backward(dy), 1e-5, "dx");
    const std::vector<Parameter*> a = plain.Parameters(),
                                  b = folded.Parameters();
    for (size_t i = 0; i < a.size(); ++i) {
      const bool folded_bias =
          a[i]->name == "conv1.bias" || a[i]->name == "conv2.bias";
      if (!folded_bias) {
        ExpectNear(b[i]->grad, a[i]->grad, 1e-4, a[i]->name);
        continue;
      }
      double noise = 0;
      for (int64_t j = 0; j < a[i]->grad.numel(); ++j) {
        EXPECT_EQ(b[i]->grad.data()[j], 0.0f) << a[i]->name;
        noise = std::max(noise, std::fabs(double(a[i]->grad.data()[j])));
      }
      EXPECT_LT(noise, 1e-4) << a[i]->name << ": not rounding noise";
    }
    const std::vector<Buffer*> c = plain.Buffers(), d = folded.Buffers();
    for (size_t i = 0; i < c.size(); ++i) {
      ExpectNear(d[i]->value, c[i]->value, 1e-5, c[i]->name);
    }
  }
  plain.SetTraining(false);
  folded.SetTraining(false);
  const Tensor x = RandomTensor({2, 3, 6, 6}, 20);
  ExpectNear(folded.Forward(x), plain.Forward(x), 1e-5, "evaluation");

  Conv2d conv(2, 3, 3);
  BatchNorm2d wrong(4);
  EXPECT_THROW(conv.FoldBiasInto(wrong), ShapeError);
  Conv2d no_bias(2, 4, 3, 1, 0, /*bias=*/false);
  EXPECT_FALSE(no_bias.FoldBiasInto(wrong));
}

TEST(Layers, SequentialOfEveryLayerKind) {
  Sequential net;
  net.Add(std::make_unique<Conv2d>(1, 3, 3, 1, 1));
  net.Add(std::make_unique<BatchNorm2d>(3));
  net.Add(std::make_unique<ReLU>());
  net.Add(std::make_unique<AvgPool2d>(2, 2));
  net.Add(std::make_unique<Conv2d>(3, 2, 2, 1, 0, /*bias=*/false));
  net.Add(std::make_unique<GlobalAvgPool>());
  net.Add(std::make_unique<Linear>(2, 4));
  InitParameters(net, InitScheme::kKaimingNormal, 7);
  CheckModuleGradients("sequential", net, RandomTensor({1, 1, 6, 6}, 8), 9);
  Sequential flat;
  flat.Add(std::make_unique<Flatten>());
  flat.Add(std::make_unique<Linear>(12, 3));
  InitParameters(flat, InitScheme::kNormal001, 10);
  CheckModuleGradients("flatten+linear", flat, RandomTensor({3, 3, 2, 2}, 11),
                       12);
}

TEST(Layers, LayerNormAndGeluGradients) {
  Sequential net;
  net.Add(std::make_unique<Linear>(5, 6));
  net.Add(std::make_unique<LayerNorm>(6));
  net.Add(std::make_unique<GELU>());
  net.Add(std::make_unique<Linear>(6, 4));
  InitParameters(net, InitScheme::kKaimingNormal, 13);
  // A learned scale and shift away from 1 and 0, so their gradients count.
  for (Parameter* p : net.Parameters()) {
    if (p->name == "1.weight") p->value = RandomTensor({6}, 14, 0.5, 1.5);
    if (p->name == "1.bias") p->value = RandomTensor({6}, 15);
  }
  CheckModuleGradients("layer_norm+gelu", net, RandomTensor({3, 5}, 16), 17);
}

// The book's other chapters: LeNet with sigmoids and max pooling, a tanh
// layer, and softmax probabilities at the end.
TEST(Layers, MaxPoolSigmoidTanhAndSoftmaxGradients) {
  Sequential net;
  net.Add(std::make_unique<Conv2d>(1, 2, 3, 1, 1));
  net.Add(std::make_unique<Sigmoid>());
  net.Add(std::make_unique<MaxPool2d>(3, 2, 1));
  net.Add(std::make_unique<Flatten>());
  net.Add(std::make_unique<Linear>(18, 5));
  net.Add(std::make_unique<Tanh>());
  net.Add(std::make_unique<Linear>(5, 4));
  net.Add(std::make_unique<Softmax>(1));
  InitParameters(net, InitScheme::kKaimingNormal, 18);
  CheckModuleGradients("maxpool+sigmoid+tanh+softmax", net,
                       RandomTensor({2, 1, 6, 6}, 19), 20);
  MaxPool2d pool(2);
  EXPECT_EQ(pool.params().stride, 2);
  EXPECT_EQ(pool.Forward(RandomTensor({1, 1, 4, 6}, 21)).shape(),
            (Shape{1, 1, 2, 3}));
}

TEST(Layers, NewLayersRefuseTheirBadArgumentsClearly) {
  EXPECT_THROW(MaxPool2d(3, 2, 2), ShapeError);
  EXPECT_THROW(MaxPool2d(0), ShapeError);
  Softmax over_channels(1);
  try {
    over_channels.Forward(RandomTensor({2, 3, 4, 4}, 22));
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("move the class axis last"));
  }
  Sigmoid sigmoid;
  sigmoid.SetTraining(false);
  sigmoid.Forward(RandomTensor({2, 2}, 23));
  EXPECT_THROW(sigmoid.Backward(RandomTensor({2, 2}, 24)), ModeError);
}

TEST(Layers, EmbeddingGradientsAndNoInputGradient) {
  Sequential net;
  net.Add(std::make_unique<Embedding>(10, 6));
  net.Add(std::make_unique<LayerNorm>(6));
  net.Add(std::make_unique<Flatten>());
  net.Add(std::make_unique<Linear>(2 * 6, 3));
  InitParameters(net, InitScheme::kKaimingNormal, 18);
  const Tensor ids = Tensor::FromVector({3, 2}, {1, 9, 4, 4, 0, 7});
  const Tensor y = net.Forward(ids);
  ASSERT_EQ(y.shape(), (Shape{3, 3}));
  const Tensor r = RandomTensor(y.shape(), 19);
  net.ZeroGrad();
  EXPECT_FALSE(net.Backward(r).defined());
  const auto loss = [&] { return Project(net.Forward(ids), r); };
  for (Parameter* p : net.Parameters()) {
    const Tensor grad = p->grad.Clone();
    ExpectGradientNear("embedding net " + p->name, p->value, grad, loss);
  }
  EXPECT_EQ(net.Parameters()[0]->name, "0.weight");
}

TEST(Layers, DropoutDrawsAMaskPerStepAndReplicaAndIsOffInEvaluation) {
  const Tensor x = RandomTensor({64, 32}, 20, 1, 2);  // No zeros.
  const auto mask = [](const Tensor& y) {
    std::vector<bool> kept;
    for (int64_t i = 0; i < y.numel(); ++i) kept.push_back(y.data()[i] != 0);
    return kept;
  };
  Dropout a(0.5f, 3), b(0.5f, 3), other_replica(0.5f, 3);
  other_replica.set_replica(1);
  const Tensor first = a.Forward(x);
  EXPECT_EQ(mask(b.Forward(x)), mask(first));  // Same seed, replica, step.
  EXPECT_NE(mask(other_replica.Forward(x)), mask(first));
  // The backward takes the last forward's mask; the next step draws anew.
  const Tensor dx = a.Backward(x);
  EXPECT_EQ(mask(dx), mask(first));
  EXPECT_NE(mask(a.Forward(x)), mask(first));
  a.SetTraining(false);
  const Tensor same = a.Forward(x);
  EXPECT_EQ(same.data(), x.data());
  EXPECT_THROW(Dropout(1.0f), ShapeError);
  Dropout fresh(0.2f);
  EXPECT_THROW(fresh.Backward(x), ModeError);
}

// Without an input gradient the first convolution skips it; every
// parameter's gradient stays the same, bit for bit.
TEST(Layers, InputGradientNotNeededSkipsTheFirstLayersAndKeepsTheRest) {
  auto make = [] {
    auto net = std::make_unique<Sequential>();
    auto stem = std::make_unique<Sequential>();
    stem->Add(std::make_unique<Conv2d>(1, 4, 3, 1, 1));
    stem->Add(std::make_unique<ReLU>());
    net->Add(std::move(stem));
    net->Add(std::make_unique<Conv2d>(4, 2, 3, 2, 1));
    net->Add(std::make_unique<GlobalAvgPool>());
    InitParameters(*net, InitScheme::kKaimingNormal, 13);
    return net;
  };
  const Tensor x = RandomTensor({3, 1, 7, 7}, 14);
  auto full = make(), skipping = make();
  skipping->SetInputGradientNeeded(false);
  const Tensor y = full->Forward(x);
  skipping->Forward(x);
  const Tensor dy = RandomTensor(y.shape(), 15);
  EXPECT_TRUE(full->Backward(dy).defined());
  EXPECT_FALSE(skipping->Backward(dy).defined());
  const auto a = full->Parameters(), b = skipping->Parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    testing::ExpectTensorNear(a[i]->name, b[i]->grad, a[i]->grad, 0);
  }
}

TEST(Layers, ParametersAndBuffersAreNamedByPath) {
  Sequential net;
  net.Add(std::make_unique<Conv2d>(1, 2, 3), "stem");
  net.Add(std::make_unique<Residual>(2, 2, false, 1), "res");
  std::vector<std::string> names;
  for (Parameter* p : net.Parameters()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "stem.weight", "stem.bias", "res.conv1.weight",
                       "res.conv1.bias", "res.conv2.weight", "res.conv2.bias",
                       "res.bn1.gamma", "res.bn1.beta", "res.bn2.gamma",
                       "res.bn2.beta"}));
  std::vector<std::string> buffers;
  for (Buffer* b : net.Buffers()) buffers.push_back(b->name);
  EXPECT_EQ(buffers, (std::vector<std::string>{
                         "res.bn1.running_mean", "res.bn1.running_var",
                         "res.bn2.running_mean", "res.bn2.running_var"}));
}

// Asking a part of a model gives the full names and renames nothing, also
// for a container filled after it was added (its path was already set).
TEST(Layers, AskingAChildForParametersKeepsTheFullNames) {
  Sequential net;
  auto* block = static_cast<Sequential*>(
      net.Add(std::make_unique<Sequential>(), "block"));
  block->Add(std::make_unique<Residual>(2, 2, false, 1));
  Module* residual = block->Children().front();
  const std::vector<Parameter*> from_child = residual->Parameters();
  ASSERT_FALSE(from_child.empty());
  EXPECT_EQ(from_child.front()->name, "block.0.conv1.weight");
  EXPECT_EQ(residual->Buffers().front()->name, "block.0.bn1.running_mean");
  // Every module, as the bucket reducer asks them, then the model.
  VisitModules(net, [](Module& m) { m.Parameters(); });
  std::vector<std::string> names;
  for (Parameter* p : net.Parameters()) names.push_back(p->name);
  EXPECT_EQ(names.front(), "block.0.conv1.weight");
  EXPECT_EQ(from_child.front()->name, "block.0.conv1.weight");
  EXPECT_EQ(residual->path(), "block.0");
}

// To() moves every tensor; batch norm's statistics follow its buffers.
TEST(Layers, ToMovesParametersAndKeepsBatchNormStatisticsLinked) {
  Sequential net;
  net.Add(std::make_unique<BatchNorm2d>(2), "bn");
  net.Add(std::make_unique<Conv2d>(2, 2, 3, 1, 1), "conv");
  net.To(Device::Cpu(1));
  for (Parameter* p : net.Parameters()) {
    EXPECT_EQ(p->value.device(), Device::Cpu(1)) << p->name;
    EXPECT_EQ(p->grad.device(), Device::Cpu(1)) << p->name;
  }
  net.Forward(RandomTensor({4, 2, 3, 3}, 13, 1.0f, 3.0f).To(Device::Cpu(1)));
  const std::vector<Buffer*> buffers = net.Buffers();
  EXPECT_EQ(buffers[0]->value.device(), Device::Cpu(1));
  // The update went into the moved buffer, not a stale copy.
  float moved = 0;
  for (int64_t i = 0; i < buffers[0]->value.numel(); ++i) {
    moved += std::abs(buffers[0]->value.data()[i]);
  }
  EXPECT_GT(moved, 0.0f);
}

TEST(Layers, BatchNormRunningStatsAreTheBuffers) {
  BatchNorm2d bn(2);
  bn.Forward(RandomTensor({4, 2, 3, 3}, 13, 1.0f, 3.0f));
  const std::vector<Buffer*> buffers = bn.Buffers();
  EXPECT_GT(buffers[0]->value.data()[0], 0.1f);  // Mean moved toward ~2.
  bn.SetTraining(false);
  const Tensor x = RandomTensor({1, 2, 1, 1}, 14);
  EXPECT_NO_THROW(bn.Forward(x));  // One value per channel is fine in eval.
}

TEST(Layers, WrongModeAndOrderAreClearErrors) {
  Conv2d conv(1, 1, 3);
  try {
    conv.Backward(Tensor({1, 1, 1, 1}));
    ADD_FAILURE();
  } catch (const ModeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("conv2d: Backward needs a Forward in "
                                    "training mode first"));
  }
  BatchNorm2d bn(1);
  bn.SetTraining(false);
  bn.Forward(Tensor({2, 1, 2, 2}));
  EXPECT_THROW(bn.Backward(Tensor({2, 1, 2, 2})), ModeError);
  EXPECT_THROW(Conv2d(0, 1, 3), ShapeError);
  EXPECT_THROW(Conv2d(1, 1, 3, 0), ShapeError);
  EXPECT_THROW(Residual(2, 4, false, 1), ShapeError);
  EXPECT_THROW(Linear(3, 0), ShapeError);
}

// Backward lets go of what Forward kept (activations are freed during the
// backward pass, as autograd frees its graph): a second Backward needs a
// new Forward.
TEST(Layers, BackwardReleasesWhatForwardKept) {
  std::vector<std::unique_ptr<Module>> modules;
  modules.push_back(std::make_unique<Conv2d>(2, 3, 3, 1, 1));
  modules.push_back(std::make_unique<BatchNorm2d>(2));
  modules.push_back(std::make_unique<ReLU>());
  modules.push_back(std::make_unique<AvgPool2d>(2, 2));
  modules.push_back(std::make_unique<GlobalAvgPool>());
  modules.push_back(std::make_unique<Flatten>());
  for (auto& module : modules) {
    const Tensor x = RandomTensor({2, 2, 4, 4}, 21);
    const Tensor y = module->Forward(x);
    const Tensor dy = RandomTensor(y.shape(), 22);
    EXPECT_NO_THROW(module->Backward(dy)) << module->kind();
    EXPECT_THROW(module->Backward(dy), ModeError) << module->kind();
    module->Forward(x);
    EXPECT_NO_THROW(module->Backward(dy)) << module->kind();
  }
  Linear linear(4, 2);
  const Tensor x = RandomTensor({3, 4}, 23);
  linear.Forward(x);
  linear.Backward(RandomTensor({3, 2}, 24));
  EXPECT_THROW(linear.Backward(RandomTensor({3, 2}, 24)), ModeError);
}

// The layer converts its weights once per step (Conv2dComputeWeight) and
// hands them to forward and backward: the same bits as the ops given the
// float32 weights, in float32 and under bf16 autocast (oneDNN's bfloat16
// kernels on CPUs that have them, else the reference).
TEST(Layers, Conv2dConvertsItsWeightsOnceAndGetsTheOpsNumbers) {
  for (const DType precision : {DType::kFloat32, DType::kBFloat16}) {
    const auto autocast = ScopedCompute(&ComputeOptions::autocast, precision);
    Conv2d conv(3, 8, 3, 1, 1);
    InitParameters(conv, InitScheme::kKaimingNormal, 5);
    const Tensor w = conv.Parameters()[0]->value;
    const Tensor b = conv.Parameters()[1]->value;
    const Tensor x = RandomTensor({4, 3, 6, 6}, 25);
    const Tensor cw = Conv2dComputeWeight(x, w);
    EXPECT_EQ(cw.SharesStorageWith(w), cw.dtype() == DType::kFloat32);
    conv.ZeroGrad();
    const Tensor y = conv.Forward(x);
    const Tensor dy = RandomTensor(y.shape(), 26);
    const Tensor dx = conv.Backward(dy);
    const Tensor want_y = Conv2dForward(x, w, b, {1, 1});
    const Conv2dGrads want = Conv2dBackward(x, w, true, dy, {1, 1});
    const std::string what = ToString(precision);
    EXPECT_EQ(testing::LargestDifference(y, want_y), 0) << what;
    EXPECT_EQ(testing::LargestDifference(dx, want.dx), 0) << what;
    EXPECT_EQ(testing::LargestDifference(conv.Parameters()[0]->grad, want.dw),
              0)
        << what;
    EXPECT_EQ(testing::LargestDifference(conv.Parameters()[1]->grad, want.db),
              0)
        << what;
  }
}

// Both devices' forward passes keep the same things: the input, the mean
// and the inverse standard deviation (backward recomputes x_hat; the first
// GPU run found a cache that only the CPU forward could fill).
TEST(Layers, BatchNormCacheKeepsTheInputAndStatistics) {
  BatchNormCache cache;
  EXPECT_FALSE(cache.filled());
  const Tensor x = RandomTensor({2, 3, 2, 2}, 25);
  Tensor gamma({3}), beta({3});
  gamma.Fill(1.0f);
  BatchNormStats stats{Tensor({3}), Tensor({3})};
  stats.running_var.Fill(1.0f);
  BatchNorm2dTrainForward(x, gamma, beta, &stats, &cache);
  ASSERT_TRUE(cache.filled());
  EXPECT_EQ(cache.input.raw_data(), x.raw_data());  // Kept, not copied.
  ASSERT_EQ(cache.mean.shape(), (Shape{3}));
  ASSERT_EQ(cache.inv_std.shape(), (Shape{3}));
  for (int64_t ch = 0; ch < 3; ++ch) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 4; ++j) sum += x.data()[(i * 3 + ch) * 4 + j];
    }
    const double mean = sum / 8;
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 4; ++j) {
        const double d = x.data()[(i * 3 + ch) * 4 + j] - mean;
        sq += d * d;
      }
    }
    EXPECT_NEAR(cache.mean.data()[ch], mean, 1e-6);
    EXPECT_NEAR(cache.inv_std.data()[ch], 1 / std::sqrt(sq / 8 + 1e-5), 1e-4);
  }
  EXPECT_EQ(cache.count, 8);
  EXPECT_FALSE(cache.relu_output.defined());
  EXPECT_FALSE(cache.added_residual);
}

TEST(Layers, InitIsSeededAndFollowsTheScheme) {
  Linear a(100, 50), b(100, 50), c(100, 50);
  InitParameters(a, InitScheme::kNormal001, 1);
  InitParameters(b, InitScheme::kNormal001, 1);
  InitParameters(c, InitScheme::kNormal001, 2);
  const Tensor& wa = a.Parameters()[0]->value;
  EXPECT_EQ(wa.data()[17], b.Parameters()[0]->value.data()[17]);
  EXPECT_NE(wa.data()[17], c.Parameters()[0]->value.data()[17]);
  double sq = 0;
  for (int64_t i = 0; i < wa.numel(); ++i) sq += wa.data()[i] * wa.data()[i];
  EXPECT_NEAR(std::sqrt(sq / wa.numel()), 0.01, 0.001);
  EXPECT_EQ(a.Parameters()[1]->value.data()[0], 0.0f);  // bias
  InitParameters(a, InitScheme::kKaimingNormal, 1);
  sq = 0;
  for (int64_t i = 0; i < wa.numel(); ++i) sq += wa.data()[i] * wa.data()[i];
  EXPECT_NEAR(std::sqrt(sq / wa.numel()), std::sqrt(2.0 / 100), 0.01);
}

}  // namespace
}  // namespace ringlet::nn
