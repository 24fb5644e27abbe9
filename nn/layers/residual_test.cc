// The Residual unit, whose ReLUs and add run inside its batch norms
// (BatchNormEpilogue), against the same unit built from separate modules.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "nn/layers/containers.h"
#include "nn/ops/elementwise.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::RandomTensor;

// A Residual unit (its ReLUs and add fused into its batch norms) gives the
// bits of the same unit built from separate modules: output, input
// gradient, every parameter's gradient and the running statistics, in
// float32 and in bfloat16 activations.
TEST(Residual, MatchesItsSeparateLayersBitForBit) {
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    Residual unit(3, 4, /*use_1x1conv=*/true, 2);
    Conv2d conv1(3, 4, 3, 2, 1), conv2(4, 4, 3, 1, 1), conv3(3, 4, 1, 2);
    BatchNorm2d bn1(4), bn2(4);
    ReLU relu1, relu2;
    conv1.SetPath("conv1");
    conv2.SetPath("conv2");
    conv3.SetPath("conv3");
    bn1.SetPath("bn1");
    bn2.SetPath("bn2");
    std::vector<Parameter*> separate;
    for (Module* m :
         std::initializer_list<Module*>{&conv1, &conv2, &conv3, &bn1, &bn2}) {
      for (Parameter* p : m->Parameters()) separate.push_back(p);
    }
    const std::vector<Parameter*> fused = unit.Parameters();
    ASSERT_EQ(fused.size(), separate.size());
    uint64_t seed = 40;
    for (size_t i = 0; i < fused.size(); ++i) {
      ASSERT_EQ(fused[i]->name, separate[i]->name);
      fused[i]->value =
          RandomTensor(fused[i]->value.shape(), ++seed, 0.5f, 1.5f);
      separate[i]->value = fused[i]->value.Clone();
    }
    const Tensor x = RandomTensor({4, 3, 9, 9}, 50, -1, 2).To(dtype);
    const Tensor dy = RandomTensor({4, 4, 5, 5}, 51).To(dtype);

    const Tensor y = unit.Forward(x);
    const Tensor dx = unit.Backward(dy);

    const Tensor shortcut = conv3.Forward(x);
    const Tensor y_ref =
        relu2.Forward(Add(bn2.Forward(conv2.Forward(
                              relu1.Forward(bn1.Forward(conv1.Forward(x))))),
                          shortcut));
    const Tensor g = relu2.Backward(dy);
    Tensor dx_ref = conv1.Backward(
        bn1.Backward(relu1.Backward(conv2.Backward(bn2.Backward(g)))));
    AddInPlace(dx_ref, conv3.Backward(g));

    const std::string type = ToString(dtype);
    ASSERT_EQ(y.dtype(), y_ref.dtype()) << type;
    EXPECT_EQ(std::memcmp(y.raw_data(), y_ref.raw_data(), y.nbytes()), 0)
        << type;
    EXPECT_EQ(std::memcmp(dx.raw_data(), dx_ref.raw_data(), dx.nbytes()), 0)
        << type;
    for (size_t i = 0; i < fused.size(); ++i) {
      const Tensor& a = fused[i]->grad;
      const Tensor& b = separate[i]->grad;
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0)
          << type << " " << fused[i]->name;
    }
    const std::vector<Buffer*> fused_buffers = unit.Buffers();
    std::vector<Buffer*> separate_buffers = bn1.Buffers();
    for (Buffer* b : bn2.Buffers()) separate_buffers.push_back(b);
    ASSERT_EQ(fused_buffers.size(), separate_buffers.size());
    for (size_t i = 0; i < fused_buffers.size(); ++i) {
      const Tensor& a = fused_buffers[i]->value;
      const Tensor& b = separate_buffers[i]->value;
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0)
          << type << " " << fused_buffers[i]->name;
    }
  }
}

}  // namespace
}  // namespace ringlet::nn
