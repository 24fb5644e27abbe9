// The dispatch point's rules, on CPU devices (any machine): inputs must be
// on one device, undefined inputs (no bias) do not count.
#include "nn/ops/dispatch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nn/ops/activation.h"
#include "nn/ops/elementwise.h"

namespace ringlet::nn {
namespace {

using ::testing::HasSubstr;

TEST(Dispatch, TheOpRunsWhereItsInputsAre) {
  const Tensor a({2}, Device::Cpu(1)), none;
  EXPECT_EQ(OpDevice("add", {&a, &none}), Device::Cpu(1));
  EXPECT_EQ(OpDevice("add", {&none}), Device::Cpu());
  EXPECT_NO_THROW(RequireCpu("conv2d", {&a, &none}));
}

TEST(Dispatch, CpuDevicesShareHostMemoryAndMix) {
  const Tensor a({2}, Device::Cpu(0)), b({2}, Device::Cpu(1));
  EXPECT_NO_THROW(Add(a, b));
  EXPECT_EQ(CommonDevice("add", {Device::Cpu(1), Device::Cpu(0)}),
            Device::Cpu(1));
}

TEST(Dispatch, AGpuTensorMixesOnlyWithItsOwnGpu) {
  EXPECT_EQ(CommonDevice("add", {Device::Cuda(1), Device::Cuda(1)}),
            Device::Cuda(1));
  try {
    CommonDevice("add", {Device::Cpu(0), Device::Cuda(1)});
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("add: inputs on cpu:0 and cuda:1"));
  }
  EXPECT_THROW(CommonDevice("add", {Device::Cuda(0), Device::Cuda(1)}),
               DeviceError);
}

// Ops take float32 unless they say more: a bfloat16 input is refused by
// name, position and type, not read as float32 bits.
TEST(Dispatch, AnOpRefusesATypeItDoesNotTake) {
  const Tensor a({2}), b({2}, Device::Cpu(), DType::kBFloat16);
  try {
    OpDevice("softmax_cross_entropy", {&a, &b});
    FAIL() << "expected a DTypeError";
  } catch (const DTypeError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("softmax_cross_entropy: input 2 (shape [2]) is "
                          "bfloat16; softmax_cross_entropy takes float32 "
                          "only"));
  }
  EXPECT_THROW(RequireCpu("pool", {&b}), DTypeError);
}

}  // namespace
}  // namespace ringlet::nn
