// The parts of trainer setup that need neither data nor GPUs.
#include "trainers/common/trainer_setup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nn/cpu_features.h"
#include "nn/gpu_precision.h"
#include "nn/memory_format.h"
#include "nn/ops/autocast.h"
#include "trainers/common/flags/trainer_devices.h"

namespace ringlet::trainers {
namespace {

using ::testing::HasSubstr;

// Under mpirun, --devices=auto: process with local rank r takes the r-th
// usable GPU of its host.
TEST(GpuOfLocalRankTest, EachLocalRankTakesItsOwnGpu) {
  const std::vector<int> usable = {0, 2, 3};  // cuda:1 is not usable.
  EXPECT_EQ(GpuOfLocalRank(0, usable), nn::Device::Cuda(0));
  EXPECT_EQ(GpuOfLocalRank(1, usable), nn::Device::Cuda(2));
  EXPECT_EQ(GpuOfLocalRank(2, usable), nn::Device::Cuda(3));
}

TEST(GpuOfLocalRankTest, MoreProcessesThanGpusSaysHowManyFit) {
  try {
    GpuOfLocalRank(2, {0, 1});
    FAIL() << "expected a DeviceError";
  } catch (const nn::DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("local rank 2"));
    EXPECT_THAT(e.what(), HasSubstr("2 usable GPU(s) (cuda:0, cuda:1)"));
    EXPECT_THAT(e.what(), HasSubstr("start at most 2 processes per host"));
  }
}

TEST(ComputeOptionsFromFlagsTest, GpuOnlyValuesAreRefusedOnCpuDevices) {
  TrainerFlags flags;
  // The defaults are fine.
  EXPECT_NO_THROW(ComputeOptionsFromFlags(flags, {nn::Device::Cpu(0)}));
  flags.conv_algorithms = "heuristic";
  EXPECT_THROW(ComputeOptionsFromFlags(flags, {nn::Device::Cpu(0)}),
               nn::DeviceError);
  flags.conv_algorithms = "fastest";
  EXPECT_THROW(ComputeOptionsFromFlags(flags, {nn::Device::Cpu(0)}),
               std::invalid_argument);
  flags.conv_algorithms = "measure";  // Only auto means nothing on CPUs.
  EXPECT_THROW(ComputeOptionsFromFlags(flags, {nn::Device::Cpu(0)}),
               nn::DeviceError);
  flags.conv_algorithms = "auto";
  flags.layout = "nhwc";
  try {
    ComputeOptionsFromFlags(flags, {nn::Device::Cpu(0)});
    FAIL() << "expected a DeviceError";
  } catch (const nn::DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--layout=nhwc applies to GPUs"));
  }
}

// auto measures float32 convolutions; --reproducible takes cuDNN's first
// deterministic guess, and refuses a timed choice.
TEST(ComputeOptionsFromFlagsTest,
     ConvAlgorithmsAutoFollowsPrecisionAndReproducible) {
  TrainerFlags flags;
  EXPECT_EQ(
      ComputeOptionsFromFlags(flags, {nn::Device::Cuda(0)}).conv_algorithms,
      nn::ConvAlgorithms::kMeasure);
  flags.reproducible = true;
  EXPECT_EQ(
      ComputeOptionsFromFlags(flags, {nn::Device::Cuda(0)}).conv_algorithms,
      nn::ConvAlgorithms::kDeterministic);
  flags.conv_algorithms = "measure";
  try {
    ComputeOptionsFromFlags(flags, {nn::Device::Cuda(0)});
    FAIL() << "expected a DeviceError";
  } catch (const nn::DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs --conv_algorithms=deterministic"));
  }
  flags = TrainerFlags();
  flags.precision = "bf16";
  EXPECT_EQ(
      ComputeOptionsFromFlags(flags, {nn::Device::Cuda(0)}).conv_algorithms,
      nn::ConvAlgorithms::kGraph);
}

TEST(ComputeOptionsFromFlagsTest, LayoutIsTheGpuActivationFormat) {
  TrainerFlags flags;
  flags.layout = "nhwc";
  EXPECT_EQ(ComputeOptionsFromFlags(flags, {nn::Device::Cuda(0)}).gpu_layout,
            nn::MemoryFormat::kChannelsLast);
  flags.layout = "nchw";
  EXPECT_EQ(ComputeOptionsFromFlags(flags, {nn::Device::Cuda(0)}).gpu_layout,
            nn::MemoryFormat::kContiguous);
}

// bf16 turns autocast on where it has kernels and says what is missing
// where not: never silently float32.
TEST(ComputeOptionsFromFlagsTest, Bf16IsAutocastOrAClearRefusal) {
  TrainerFlags flags;
  flags.precision = "bf16";
  const bool has =
      nn::GetCpuFeatures().avx512_bf16 || nn::GetCpuFeatures().amx_bf16;
  try {
    EXPECT_EQ(
        ComputeOptionsFromFlags(flags, {nn::Device::Cpu(0), nn::Device::Cpu(1)})
            .autocast,
        nn::DType::kBFloat16);
    EXPECT_TRUE(has);
  } catch (const nn::DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr(has ? "oneDNN" : "AVX512_BF16"));
  }
  // GPUs take it (cuDNN's bfloat16 convolutions).
  EXPECT_EQ(ComputeOptionsFromFlags(flags, {nn::Device::Cuda(0)}).autocast,
            nn::DType::kBFloat16);
  flags.precision = "fp32";
  EXPECT_EQ(ComputeOptionsFromFlags(flags, {nn::Device::Cpu(0)}).autocast,
            nn::DType::kFloat32);
  // Nothing process-wide changed.
  EXPECT_EQ(nn::autocast(), nn::DType::kFloat32);
}

// resnet_dp's defaults (per device) and lenet_scratch's (the whole batch).
const TrainerDefaults kResNet{256, 0.1, /*per_device=*/true};
const TrainerDefaults kLeNet{256, 0.2, /*per_device=*/false};

TEST(ResolveBatchAndLrTest, LeftOutPerDeviceDefaultsScaleWithTheDevices) {
  for (int devices : {1, 2, 4}) {
    const BatchAndLr run = ResolveBatchAndLr({}, kResNet, devices, nullptr);
    EXPECT_EQ(run.batch_size, 256 * devices);
    EXPECT_DOUBLE_EQ(run.lr, 0.1 * devices);
    const std::string note =
        devices == 1 ? ""
                     : "scaled for " + std::to_string(devices) + " devices";
    EXPECT_EQ(run.batch_note, note);
    EXPECT_EQ(run.lr_note, note);
    // The chapter's LeNet: the same batch and lr on any number of devices.
    const BatchAndLr lenet = ResolveBatchAndLr({}, kLeNet, devices, nullptr);
    EXPECT_EQ(lenet.batch_size, 256);
    EXPECT_DOUBLE_EQ(lenet.lr, 0.2);
    EXPECT_EQ(lenet.batch_note + lenet.lr_note, "");
  }
}

TEST(ResolveBatchAndLrTest, GivenValuesAreTakenAsGiven) {
  TrainerFlags flags;
  flags.batch_size = 256;
  flags.lr = 0.05;
  for (int devices : {1, 2, 4}) {
    for (const TrainerDefaults& d : {kResNet, kLeNet}) {
      const BatchAndLr run = ResolveBatchAndLr(flags, d, devices, nullptr);
      EXPECT_EQ(run.batch_size, 256);
      EXPECT_DOUBLE_EQ(run.lr, 0.05);
      EXPECT_EQ(run.batch_note + run.lr_note, "");
    }
  }
  // One given, one left out: each by its own rule.
  TrainerFlags batch_only;
  batch_only.batch_size = 100;
  const BatchAndLr run = ResolveBatchAndLr(batch_only, kResNet, 2, nullptr);
  EXPECT_EQ(run.batch_size, 100);
  EXPECT_DOUBLE_EQ(run.lr, 0.2);
  EXPECT_EQ(run.lr_note, "scaled for 2 devices");
}

TEST(ResolveBatchAndLrTest, AResumedRunKeepsTheCheckpointsUnlessGiven) {
  Checkpoint written_on_two;
  written_on_two.settings = {{"batch_size", "512", true}, {"lr", "0.2", true}};
  for (int devices : {1, 2, 4}) {
    const BatchAndLr run =
        ResolveBatchAndLr({}, kResNet, devices, &written_on_two);
    EXPECT_EQ(run.batch_size, 512);
    EXPECT_DOUBLE_EQ(run.lr, 0.2);
    EXPECT_EQ(run.batch_note, "the checkpoint's");
  }
  Checkpoint garbled = written_on_two;
  garbled.settings[0].value = "5x";
  EXPECT_THROW(ResolveBatchAndLr({}, kResNet, 1, &garbled), CheckpointError);
  TrainerFlags flags;
  flags.lr = 0.3;
  const BatchAndLr run = ResolveBatchAndLr(flags, kResNet, 4, &written_on_two);
  EXPECT_EQ(run.batch_size, 512);
  EXPECT_DOUBLE_EQ(run.lr, 0.3);
  EXPECT_EQ(run.lr_note, "");
}

}  // namespace
}  // namespace ringlet::trainers
