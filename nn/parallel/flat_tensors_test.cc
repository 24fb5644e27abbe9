#include "nn/parallel/flat_tensors.h"

#include <gtest/gtest.h>

#include <vector>

#include "gpu/device_probe.h"
#include "nn/ops/elementwise.h"

namespace ringlet::nn {
namespace {

std::vector<float> Values(const Tensor& t) {
  const Tensor host = t.To(Device::Cpu());
  return std::vector<float>(host.data(), host.data() + host.numel());
}

// Packs three tensors (one empty) in order, changes the flat values as a
// collective would, unpacks into each tensor; packs again after a change.
void CheckRoundTrip(Device device) {
  Tensor a = Tensor::FromVector({2, 2}, {1, 2, 3, 4}).To(device);
  Tensor empty({0}, device);
  Tensor b = Tensor::FromVector({3}, {5, 6, 7}).To(device);
  FlatTensors flat({&a, &empty, &b});
  ASSERT_EQ(flat.count(), 7);
  EXPECT_EQ(flat.device(), device);
  flat.PackForCollective();
  EXPECT_EQ(Values(flat.flat()), (std::vector<float>{1, 2, 3, 4, 5, 6, 7}));
  DivideInPlace(flat.flat(), -1.0f);
  flat.Unpack();
  EXPECT_EQ(Values(a), (std::vector<float>{-1, -2, -3, -4}));
  EXPECT_EQ(Values(b), (std::vector<float>{-5, -6, -7}));
  a.Fill(9);
  flat.Pack();
  flat.WaitUntilPacked();
  EXPECT_EQ(Values(flat.flat()), (std::vector<float>{9, 9, 9, 9, -5, -6, -7}));
}

TEST(FlatTensors, PacksInOrderAndUnpacksIntoEachTensor) {
  CheckRoundTrip(Device::Cpu());
}

TEST(FlatTensors, PacksOnTheGpuWithoutTheHost) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
  CheckRoundTrip(Device::Cuda(report.usable[0]));
}

TEST(FlatTensors, AnEmptyListIsAnEmptyCpuBuffer) {
  FlatTensors flat(std::vector<Tensor*>{});
  EXPECT_EQ(flat.count(), 0);
  EXPECT_TRUE(flat.device().is_cpu());
  flat.PackForCollective();
  flat.Unpack();
}

}  // namespace
}  // namespace ringlet::nn
