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

// Channels-last is a GPU memory format: a CPU op names the input and the
// conversion instead of reading NHWC storage as NCHW.
TEST(Dispatch, CpuOpsRefuseChannelsLastInputs) {
  Tensor x({1, 2, 3, 3});
  x.Fill(1.0f);
  const Tensor last = x.ToMemoryFormat(MemoryFormat::kChannelsLast);
  try {
    Add(x, last);
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("add: input 2 (shape [1, 2, 3, 3]) is "
                                    "channels-last"));
    EXPECT_THAT(e.what(),
                HasSubstr("ToMemoryFormat(MemoryFormat::kContiguous)"));
  }
  EXPECT_THROW(ReluForward(last), DeviceError);
  // Where both orders agree there is nothing to refuse.
  const Tensor gray =
      Tensor({1, 1, 3, 3}).ToMemoryFormat(MemoryFormat::kChannelsLast);
  EXPECT_NO_THROW(ReluForward(gray));
  // Flatten hands a linear layer NCHW features.
  const Tensor flat = Flatten(last);
  EXPECT_EQ(flat.memory_format(), MemoryFormat::kContiguous);
  EXPECT_EQ(flat.shape(), (Shape{1, 18}));
}

}  // namespace
}  // namespace ringlet::nn
