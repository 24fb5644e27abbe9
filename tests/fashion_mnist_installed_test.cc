// The installed Fashion-MNIST (Debian's dataset-fashion-mnist) loads whole
// and looks like the published data set.
#include <gtest/gtest.h>

#include <array>

#include "data/batch_loader.h"
#include "data/fashion_mnist.h"

namespace ringlet::data {
namespace {

class InstalledFashionMnist : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    data_ = new FashionMnist(LoadFashionMnist(ResolveFashionMnistDir()));
  }
  static void TearDownTestSuite() { delete data_; }
  static FashionMnist* data_;
};
FashionMnist* InstalledFashionMnist::data_ = nullptr;

std::array<int64_t, kNumClasses> ClassCounts(const Split& split) {
  std::array<int64_t, kNumClasses> counts{};
  for (int32_t label : split.labels) ++counts.at(label);
  return counts;
}

TEST_F(InstalledFashionMnist, HasThePublishedCounts) {
  EXPECT_EQ(data_->train.size(), 60000);
  EXPECT_EQ(data_->test.size(), 10000);
  for (int c = 0; c < kNumClasses; ++c) {
    EXPECT_EQ(ClassCounts(data_->train)[c], 6000) << kClassNames[c];
    EXPECT_EQ(ClassCounts(data_->test)[c], 1000) << kClassNames[c];
  }
}

TEST_F(InstalledFashionMnist, FirstImagesAreTheKnownOnes) {
  // The first training and test images are both ankle boots (class 9).
  EXPECT_EQ(data_->train.labels[0], 9);
  EXPECT_EQ(data_->test.labels[0], 9);
  // Images are dark backgrounds with a bright object: the mean pixel of the
  // training set is 72.94 (0.2860 after scaling to [0, 1]).
  double sum = 0;
  for (uint8_t p : data_->train.pixels) sum += p;
  EXPECT_NEAR(sum / data_->train.pixels.size() / 255.0, 0.2860, 0.0005);
}

TEST_F(InstalledFashionMnist, AnEpochOfBatchesCoversTheTrainingSet) {
  LoaderOptions options;
  options.batch_size = 256;
  options.seed = 1;
  BatchLoader loader(data_->train, options);
  EXPECT_EQ(loader.batches_per_epoch(), 235);
  loader.StartEpoch(0);
  Batch batch;
  std::array<int64_t, kNumClasses> counts{};
  int64_t images = 0;
  double pixel_sum = 0;
  while (loader.Next(&batch)) {
    images += batch.size;
    for (int64_t i = 0; i < batch.size; ++i) {
      ++counts.at(batch.targets_as<int32_t>()[i]);
    }
    for (float v : batch.inputs) pixel_sum += v;
  }
  EXPECT_EQ(images, 60000);
  EXPECT_EQ(batch.size, 60000 - 234 * 256);
  for (int c = 0; c < kNumClasses; ++c) EXPECT_EQ(counts[c], 6000);
  EXPECT_NEAR(pixel_sum / (60000.0 * kImagePixels), 0.2860, 0.0005);
}

}  // namespace
}  // namespace ringlet::data
