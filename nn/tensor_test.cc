#include "nn/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringlet::nn {
namespace {

using ::testing::HasSubstr;

TEST(Tensor, ZerosWithShape) {
  Tensor t({2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.dim(1), 3);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(t.data()[i], 0.0f);
  EXPECT_EQ(t.device(), Device::Cpu());
}

TEST(Tensor, ViewsShareStorageClonesDoNot) {
  Tensor t = Tensor::FromVector({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor v = t.View({3, 2});
  v.data()[0] = 9;
  EXPECT_EQ(t.data()[0], 9);
  EXPECT_TRUE(v.SharesStorageWith(t));
  Tensor c = t.Clone();
  c.data()[1] = 7;
  EXPECT_EQ(t.data()[1], 2);
  EXPECT_FALSE(c.SharesStorageWith(t));
}

TEST(Tensor, BadShapesAreNamed) {
  Tensor t({2, 3});
  try {
    t.View({4, 2});
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot view shape [2, 3] as [4, 2]"));
  }
  EXPECT_THROW(Tensor({2, -1}), ShapeError);
  EXPECT_THROW(Tensor::FromVector({2, 2}, {1, 2, 3}), ShapeError);
  try {
    ExpectShape("linear", "input", t, {-1, 4});
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("linear: input has shape [2, 3], expected [*, 4]"));
  }
  EXPECT_NO_THROW(ExpectShape("linear", "input", t, {-1, 3}));
}

TEST(Tensor, CudaStorageIsAClearErrorInThisBuild) {
  EXPECT_THROW(Tensor({2}, Device::Cuda(0)), DeviceError);
}

}  // namespace
}  // namespace ringlet::nn

namespace ringlet::nn {
namespace {

// Kernels' results must not depend on where a tensor happens to sit.
TEST(Tensor, StorageIs64ByteAligned) {
  for (int64_t n : {1, 3, 17, 1000, 1 << 20}) {
    for (const Tensor& t : {Tensor({n}), Tensor::Uninitialized({n}),
                            Tensor::FromVector({2}, {1.0f, 2.0f})}) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u) << n;
    }
  }
}

}  // namespace
}  // namespace ringlet::nn
