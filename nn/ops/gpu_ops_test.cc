// nn's ops reach a GPU through the registered GpuOps: present exactly when
// the build has CUDA (so a CUDA library that is not linked whole, and so
// never registers, fails here), absent with a clear error otherwise.
#include "nn/ops/gpu_ops.h"

#include <gtest/gtest.h>

#include <string>

#include "nn/ops/activation.h"

namespace ringlet::nn {
namespace {

TEST(GpuOps, RegisteredExactlyWhenTheBuildHasCuda) {
  if (RINGLET_EXPECT_CUDA == 1) {
    EXPECT_NO_THROW(GpuOpsFor(Device::Cuda(0)));
    return;
  }
  try {
    GpuOpsFor(Device::Cuda(0));
    FAIL() << "a build without CUDA registered GPU ops";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "cuda:0: nn's GPU ops are not in this build"),
              std::string::npos)
        << e.what();
  }
}

TEST(GpuOps, CpuTensorsNeverAskForThem) {
  // The dispatch asks for GpuOps only for tensors on a GPU.
  Tensor x({2}, Device::Cpu());
  x.data()[0] = -1.0f;
  x.data()[1] = 2.0f;
  const Tensor y = ReluForward(x);
  EXPECT_EQ(y.data()[0], 0.0f);
  EXPECT_EQ(y.data()[1], 2.0f);
}

}  // namespace
}  // namespace ringlet::nn
