// The CPU convolution setting in both kinds of build: with oneDNN (the
// default) and with --config=without_onednn, where asking for oneDNN is a
// clear error, never a silent switch to Eigen.
#include "nn/ops/cpu_conv_backend.h"

#include <stdexcept>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nn/compute_options.h"

namespace ringlet::nn {
namespace {

using ::testing::HasSubstr;

TEST(CpuConvBackend, DefaultsToOneDnnExactlyWhereItIsBuiltIn) {
  // The test runs without $RINGLET_CPU_CONV (Bazel's test environment).
  EXPECT_EQ(GetCpuConvBackend(), CpuConvHasOneDnn() ? CpuConvBackend::kOneDnn
                                                    : CpuConvBackend::kEigen);
  EXPECT_EQ(ParseCpuConvBackend("eigen"), CpuConvBackend::kEigen);
}

TEST(CpuConvBackend, OneDnnIsRefusedWithTheReasonInABuildWithoutIt) {
  if (CpuConvHasOneDnn()) {
    EXPECT_EQ(ParseCpuConvBackend("onednn"), CpuConvBackend::kOneDnn);
    const auto conv_backend =
        ScopedCompute(&ComputeOptions::cpu_conv, CpuConvBackend::kOneDnn);
    EXPECT_EQ(GetCpuConvBackend(), CpuConvBackend::kOneDnn);
    return;
  }
  try {
    ParseCpuConvBackend("onednn");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("this build has no oneDNN"));
    EXPECT_THAT(e.what(), HasSubstr("use eigen"));
  }
  EXPECT_EQ(GetCpuConvBackend(), CpuConvBackend::kEigen);
  const auto onednn =
      ScopedCompute(&ComputeOptions::cpu_conv, CpuConvBackend::kOneDnn);
  EXPECT_THROW(GetCpuConvBackend(), std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::nn
