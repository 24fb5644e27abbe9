#include "nn/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "nn/compute_options.h"
#include "nn/gpu_precision.h"

namespace ringlet::nn {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string ErrorOf(const std::string& spec, int gpus) {
  try {
    ResolveDevices(spec, gpus);
  } catch (const DeviceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << spec;
  return "";
}

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(ParseDevice("cpu"), Device::Cpu(0));
  EXPECT_EQ(ParseDevice("cpu:3"), Device::Cpu(3));
  EXPECT_EQ(ParseDevice("cuda:1"), Device::Cuda(1));
  EXPECT_EQ(ToString(Device::Cuda(7)), "cuda:7");
  EXPECT_EQ(ToString({Device::Cuda(0), Device::Cuda(1)}), "[cuda:0, cuda:1]");
  for (const char* bad : {"gpu:0", "cuda", "cuda:", "cuda:-1", "cpu:x", ""}) {
    EXPECT_THROW(ParseDevice(bad), DeviceError) << bad;
  }
}

TEST(Device, AutoTakesEveryGpuElseFallsBackToCpu) {
  EXPECT_EQ(ResolveDevices("auto", 2),
            (std::vector<Device>{Device::Cuda(0), Device::Cuda(1)}));
  EXPECT_EQ(ResolveDevices("auto", 0), std::vector<Device>{Device::Cpu(0)});
  EXPECT_EQ(ResolveDevices("auto", 0, 2),
            (std::vector<Device>{Device::Cpu(0), Device::Cpu(1)}));
}

TEST(Device, CpuCountAndCudaList) {
  EXPECT_EQ(
      ResolveDevices("cpu:3", 0),
      (std::vector<Device>{Device::Cpu(0), Device::Cpu(1), Device::Cpu(2)}));
  EXPECT_EQ(ResolveDevices("cuda:1,0", 2),
            (std::vector<Device>{Device::Cuda(1), Device::Cuda(0)}));
  // Several replicas on one GPU, in either spelling.
  EXPECT_EQ(
      ResolveDevices("cuda:0,cuda:0,0", 1),
      (std::vector<Device>{Device::Cuda(0), Device::Cuda(0), Device::Cuda(0)}));
}

TEST(Device, MissingGpuIsAClearError) {
  EXPECT_THAT(ErrorOf("cuda:0", 0),
              AllOf(HasSubstr("cuda:0 does not exist"),
                    HasSubstr("0 usable GPUs"), HasSubstr("cpu:2")));
  EXPECT_THAT(ErrorOf("cuda:0,2", 2), HasSubstr("cuda:2 does not exist"));
  EXPECT_THAT(ErrorOf("cuda:0,cuda:x", 2), HasSubstr("'x' is not a GPU index"));
}

TEST(Device, ACpuListNamesThoseDevices) {
  EXPECT_EQ(ResolveDevices("cpu:0,1", 0),
            (std::vector<Device>{Device::Cpu(0), Device::Cpu(1)}));
  EXPECT_EQ(ResolveDevices("cpu:0,cpu:2", 0),
            (std::vector<Device>{Device::Cpu(0), Device::Cpu(2)}));
  // A count without a comma, as before.
  EXPECT_EQ(ResolveDevices("cpu:1", 0), (std::vector<Device>{Device::Cpu(0)}));
}

TEST(Device, BadSpecsNameTheSpec) {
  EXPECT_THAT(ErrorOf("cpu:0", 0), HasSubstr("at least 1"));
  // Each of these once said "cpu needs a count of at least 1".
  EXPECT_THAT(ErrorOf("cpu:0,cpu:0", 0), HasSubstr("cpu:0 is named twice"));
  EXPECT_THAT(ErrorOf("cpu:0,x", 0),
              HasSubstr("'x' is not a CPU device index"));
  EXPECT_THAT(ErrorOf("cpu:2x", 0),
              HasSubstr("'2x' is not a whole number of CPU devices"));
  // cpu:1000 was killed by the out-of-memory killer after 96 s.
  EXPECT_THAT(ErrorOf("cpu:1000", 0),
              HasSubstr("at most 256 CPU devices per process"));
  EXPECT_EQ(ResolveDevices("cpu:256", 0).size(), 256u);
  EXPECT_THAT(ErrorOf("tpu:1", 0), HasSubstr("--devices=tpu:1"));
  EXPECT_THAT(ErrorOf("cuda:a", 1), HasSubstr("'a' is not a GPU index"));
  EXPECT_THAT(ErrorOf("cuda", 1), HasSubstr("not understood"));
}

TEST(GpuPrecision, ParsesNamesAndRemembersTheSetting) {
  EXPECT_EQ(ParseGpuPrecision("fp32"), GpuPrecision::kFp32);
  EXPECT_EQ(ParseGpuPrecision("tf32"), GpuPrecision::kTf32);
  EXPECT_THROW(ParseGpuPrecision("fp16"), std::invalid_argument);
  EXPECT_STREQ(Name(GpuPrecision::kTf32), "tf32");
  EXPECT_EQ(gpu_precision(), GpuPrecision::kFp32);  // The default.
  const auto precision =
      ScopedCompute(&ComputeOptions::gpu_precision, GpuPrecision::kTf32);
  EXPECT_EQ(gpu_precision(), GpuPrecision::kTf32);
}

TEST(ConvAlgorithmChoice, ParsesNamesAndRemembersTheSetting) {
  for (ConvAlgorithms choice :
       {ConvAlgorithms::kMeasure, ConvAlgorithms::kHeuristic,
        ConvAlgorithms::kDeterministic, ConvAlgorithms::kGraph}) {
    EXPECT_EQ(ParseConvAlgorithms(Name(choice)), choice);
  }
  try {
    ParseConvAlgorithms("fastest");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("measure, heuristic, deterministic or graph"));
  }
  EXPECT_EQ(conv_algorithms(), ConvAlgorithms::kMeasure);  // The default.
  // auto: the graph API for bfloat16 convolutions, measured choices else.
  EXPECT_EQ(ResolveConvAlgorithms("auto", true), ConvAlgorithms::kGraph);
  EXPECT_EQ(ResolveConvAlgorithms("auto", false), ConvAlgorithms::kMeasure);
  EXPECT_EQ(ResolveConvAlgorithms("heuristic", true),
            ConvAlgorithms::kHeuristic);
  EXPECT_THROW(ResolveConvAlgorithms("fastest", false), std::invalid_argument);
  const auto algorithms = ScopedCompute(&ComputeOptions::conv_algorithms,
                                        ConvAlgorithms::kDeterministic);
  EXPECT_EQ(conv_algorithms(), ConvAlgorithms::kDeterministic);
}

}  // namespace
}  // namespace ringlet::nn
