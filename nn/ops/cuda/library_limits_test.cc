#include "nn/ops/cuda/library_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nn/tensor.h"

namespace ringlet::nn::cuda_ops {
namespace {

using ::testing::HasSubstr;

// ResNet-18's first convolution on Fashion-MNIST: 64 x 28 x 28 values per
// sample, so 42799 samples fit 2^31 - 1 and 42800 do not.
TEST(CheckCudnnTensor, NamesTheShapeAndTheLargestBatchThatFits) {
  EXPECT_NO_THROW(CheckCudnnTensor(42799, 64, 28, 28));
  EXPECT_NO_THROW(CheckCudnnTensor(0, 64, 28, 28));
  try {
    CheckCudnnTensor(60000, 64, 28, 28);
    ADD_FAILURE() << "no error past 2^31 elements";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[60000, 64, 28, 28]"));
    EXPECT_THAT(e.what(), HasSubstr("3010560000 elements"));
    EXPECT_THAT(e.what(), HasSubstr("at most 42799 samples per GPU"));
    EXPECT_THAT(e.what(), HasSubstr("--batch_size"));
  }
  EXPECT_THROW(CheckCudnnTensor(42800, 64, 28, 28), ShapeError);
  EXPECT_THROW(CheckCudnnTensor(-1, 1, 1, 1), ShapeError);
  // A count that overflows 64 bits is an error too, not a wrap.
  EXPECT_THROW(CheckCudnnTensor(int64_t{1} << 40, int64_t{1} << 30, 1, 1),
               ShapeError);
}

TEST(CheckCublasProduct, EveryDimensionFitsAnInt) {
  EXPECT_NO_THROW(CheckCublasProduct(int64_t{1} << 30, 512, 10));
  try {
    CheckCublasProduct(int64_t{3} << 30, 512, 10);
    ADD_FAILURE() << "no error past INT_MAX rows";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cuBLAS takes at most 2^31 - 1"));
  }
}

}  // namespace
}  // namespace ringlet::nn::cuda_ops
