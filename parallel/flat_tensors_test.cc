#include "parallel/flat_tensors.h"

#include <gtest/gtest.h>

#include <vector>

#include "gpu/device_probe.h"
#include "nn/ops/elementwise.h"

namespace ringlet::parallel {
namespace {

std::vector<float> Values(const nn::Tensor& t) {
  const nn::Tensor host = t.To(nn::Device::Cpu());
  return std::vector<float>(host.data(), host.data() + host.numel());
}

// Packs three tensors (one empty) in order, changes the flat values as a
// collective would, unpacks into each tensor; packs again after a change.
void CheckRoundTrip(nn::Device device) {
  nn::Tensor a = nn::Tensor::FromVector({2, 2}, {1, 2, 3, 4}).To(device);
  nn::Tensor empty({0}, device);
  nn::Tensor b = nn::Tensor::FromVector({3}, {5, 6, 7}).To(device);
  FlatTensors flat({&a, &empty, &b});
  ASSERT_EQ(flat.count(), 7);
  EXPECT_EQ(flat.device(), device);
  flat.PackForCollective();
  EXPECT_EQ(Values(flat.flat()), (std::vector<float>{1, 2, 3, 4, 5, 6, 7}));
  nn::DivideInPlace(flat.flat(), -1.0f);
  flat.Unpack();
  EXPECT_EQ(Values(a), (std::vector<float>{-1, -2, -3, -4}));
  EXPECT_EQ(Values(b), (std::vector<float>{-5, -6, -7}));
  a.Fill(9);
  flat.Pack();
  flat.WaitUntilPacked();
  EXPECT_EQ(Values(flat.flat()), (std::vector<float>{9, 9, 9, 9, -5, -6, -7}));
}

// The tensors become views into the flat tensor, values kept, each at a
// multiple of 64 elements; a collective's change reaches them without an
// Unpack; a tensor replaced since is copied in and out again.
void CheckViews(nn::Device device) {
  nn::Tensor a = nn::Tensor::FromVector({2, 2}, {1, 2, 3, 4}).To(device);
  nn::Tensor empty({0}, device);
  nn::Tensor b = nn::Tensor::FromVector({3}, {5, 6, 7}).To(device);
  FlatTensors flat({&a, &empty, &b}, FlatTensors::kViews);
  ASSERT_EQ(flat.count(), 64 + 3);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(flat.IsView(i)) << i;
  EXPECT_EQ(a.device_data(), flat.data());
  EXPECT_EQ(b.device_data(), flat.data() + 64);
  EXPECT_EQ(Values(a), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(Values(b), (std::vector<float>{5, 6, 7}));
  const std::vector<float> packed = Values(flat.flat());
  EXPECT_EQ(packed[3], 4);
  for (int i = 4; i < 64; ++i) ASSERT_EQ(packed[i], 0) << "gap " << i;
  EXPECT_EQ(packed[66], 7);

  flat.PackForCollective();
  nn::DivideInPlace(flat.flat(), -1.0f);
  EXPECT_EQ(Values(a), (std::vector<float>{-1, -2, -3, -4}));
  EXPECT_EQ(Values(b), (std::vector<float>{-5, -6, -7}));

  b = nn::Tensor::FromVector({3}, {8, 8, 8})
          .To(device);  // Replaced, not a view.
  EXPECT_FALSE(flat.IsView(2));
  EXPECT_TRUE(flat.IsView(0));
  flat.PackForCollective();
  EXPECT_EQ(Values(flat.flat())[64], 8);
  nn::DivideInPlace(flat.flat(), 2.0f);
  flat.Unpack();
  EXPECT_EQ(Values(b), (std::vector<float>{4, 4, 4}));
  EXPECT_EQ(Values(a), (std::vector<float>{-0.5f, -1, -1.5f, -2}));
}

TEST(FlatTensors, ViewsShareTheFlatStorage) { CheckViews(nn::Device::Cpu()); }

TEST(FlatTensors, ViewsShareTheFlatStorageOnTheGpu) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
  CheckViews(nn::Device::Cuda(report.usable[0]));
}

TEST(FlatTensors, PacksInOrderAndUnpacksIntoEachTensor) {
  CheckRoundTrip(nn::Device::Cpu());
}

TEST(FlatTensors, PacksOnTheGpuWithoutTheHost) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
  CheckRoundTrip(nn::Device::Cuda(report.usable[0]));
}

TEST(FlatTensors, AnEmptyListIsAnEmptyCpuBuffer) {
  FlatTensors flat(std::vector<nn::Tensor*>{});
  EXPECT_EQ(flat.count(), 0);
  EXPECT_TRUE(flat.device().is_cpu());
  flat.PackForCollective();
  flat.Unpack();
}

}  // namespace
}  // namespace ringlet::parallel
