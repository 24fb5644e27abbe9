#include "data/batch_loader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>

#include "data/data_error.h"
#include "data/fashion_mnist.h"
#include "data/testing/idx_writer.h"

namespace ringlet::data {
namespace {

// A split whose image i has every pixel equal to i % 256 and label i % 10,
// so each float batch reveals which images it holds.
Split MakeSplit(int64_t n) {
  Split split;
  split.name = "train";
  split.pixels.resize(n * kImagePixels);
  split.labels.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int p = 0; p < kImagePixels; ++p) {
      split.pixels[i * kImagePixels + p] = testing::SyntheticPixel(i, p);
    }
    split.labels[i] = static_cast<int32_t>(i % 10);
  }
  return split;
}

// Which image of `split` a batch row holds, found from its first two pixels
// and label; checks every pixel of the row against that image.
int64_t IdentifyRow(const Split& split, const Batch& batch, int64_t row) {
  for (int64_t i = 0; i < split.size(); ++i) {
    if (split.labels[i] != batch.targets_as<int32_t>()[row]) continue;
    bool same = true;
    for (int p = 0; p < kImagePixels && same; ++p) {
      same = batch.input(row)[p] == split.image(i)[p] / 255.0f;
    }
    if (same) return i;
  }
  ADD_FAILURE() << "batch row " << row << " matches no image";
  return -1;
}

// The sequence of image indices one epoch yields.
std::vector<int64_t> EpochOrder(BatchLoader& loader, const Split& split,
                                int64_t epoch) {
  loader.StartEpoch(epoch);
  std::vector<int64_t> order;
  Batch batch;
  while (loader.Next(&batch)) {
    EXPECT_EQ(batch.epoch, epoch);
    for (int64_t r = 0; r < batch.size; ++r) {
      order.push_back(IdentifyRow(split, batch, r));
    }
  }
  return order;
}

class BatchLoaderTest : public ::testing::TestWithParam<int> {
 protected:
  LoaderOptions Options(int64_t batch_size, uint64_t seed = 7) {
    LoaderOptions o;
    o.batch_size = batch_size;
    o.seed = seed;
    o.prefetch = GetParam();
    return o;
  }
};

TEST_P(BatchLoaderTest, EveryImageOncePerEpochWithItsLabel) {
  const Split split = MakeSplit(103);
  BatchLoader loader(split, Options(10));
  EXPECT_EQ(loader.batches_per_epoch(), 11);
  const std::vector<int64_t> order = EpochOrder(loader, split, 0);
  ASSERT_EQ(order.size(), 103u);
  EXPECT_EQ(std::set<int64_t>(order.begin(), order.end()).size(), 103u);
}

TEST_P(BatchLoaderTest, LastPartialBatchKeptOrDropped) {
  const Split split = MakeSplit(25);
  std::vector<int64_t> sizes;
  BatchLoader keep(split, Options(10));
  keep.StartEpoch(0);
  Batch batch;
  while (keep.Next(&batch)) sizes.push_back(batch.size);
  EXPECT_EQ(sizes, (std::vector<int64_t>{10, 10, 5}));
  EXPECT_EQ(batch.inputs.size(), 5u * kImagePixels);
  EXPECT_EQ(batch.targets.size(), 5u * sizeof(int32_t));
  EXPECT_EQ(batch.input_shape, (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(batch.target.Describe(), "int32 {}");

  LoaderOptions drop_options = Options(10);
  drop_options.drop_last = true;
  BatchLoader drop(split, drop_options);
  EXPECT_EQ(drop.batches_per_epoch(), 2);
  drop.StartEpoch(0);
  sizes.clear();
  while (drop.Next(&batch)) sizes.push_back(batch.size);
  EXPECT_EQ(sizes, (std::vector<int64_t>{10, 10}));
}

TEST_P(BatchLoaderTest, OrderDependsOnlyOnSeedAndEpoch) {
  const Split split = MakeSplit(64);
  BatchLoader a(split, Options(16, 42));
  BatchLoader b(split, Options(16, 42));
  BatchLoader other_seed(split, Options(16, 43));
  const std::vector<int64_t> a0 = EpochOrder(a, split, 0);
  const std::vector<int64_t> a1 = EpochOrder(a, split, 1);
  EXPECT_EQ(a0, EpochOrder(b, split, 0));
  EXPECT_EQ(a1, EpochOrder(b, split, 1));
  EXPECT_NE(a0, a1);
  EXPECT_NE(a0, EpochOrder(other_seed, split, 0));
  // Replaying an epoch gives its order again.
  EXPECT_EQ(a0, EpochOrder(a, split, 0));
  // And the order is a real shuffle, not the identity.
  std::vector<int64_t> identity(64);
  for (int64_t i = 0; i < 64; ++i) identity[i] = i;
  EXPECT_NE(a0, identity);
}

TEST_P(BatchLoaderTest, WithoutShuffleKeepsFileOrder) {
  const Split split = MakeSplit(23);
  LoaderOptions options = Options(5);
  options.shuffle = false;
  BatchLoader loader(split, options);
  const std::vector<int64_t> order = EpochOrder(loader, split, 3);
  ASSERT_EQ(order.size(), 23u);
  for (int64_t i = 0; i < 23; ++i) EXPECT_EQ(order[i], i);
}

TEST_P(BatchLoaderTest, ImagesAreFloatsInUnitRangeNchw) {
  Split split = MakeSplit(2);
  for (int p = 0; p < kImagePixels; ++p) {
    split.pixels[p] = 0;
    split.pixels[kImagePixels + p] = 255;
  }
  split.pixels[3 * 28 + 5] = 51;  // Row 3, column 5 of image 0.
  LoaderOptions options = Options(2);
  options.shuffle = false;
  BatchLoader loader(split, options);
  loader.StartEpoch(0);
  Batch batch;
  ASSERT_TRUE(loader.Next(&batch));
  ASSERT_EQ(batch.inputs.size(), 2u * 1 * 28 * 28);
  EXPECT_EQ(batch.inputs[3 * 28 + 5], 51 / 255.0f);
  EXPECT_EQ(batch.inputs[3 * 28 + 6], 0.0f);
  EXPECT_EQ(batch.inputs[kImagePixels + 100], 1.0f);
  EXPECT_EQ(std::vector<int32_t>(batch.targets_as<int32_t>(),
                                 batch.targets_as<int32_t>() + 2),
            (std::vector<int32_t>{0, 1}));
}

TEST_P(BatchLoaderTest, RestartingMidEpochStartsClean) {
  const Split split = MakeSplit(50);
  BatchLoader loader(split, Options(7));
  loader.StartEpoch(0);
  Batch batch;
  ASSERT_TRUE(loader.Next(&batch));
  ASSERT_TRUE(loader.Next(&batch));
  BatchLoader fresh(split, Options(7));
  EXPECT_EQ(EpochOrder(loader, split, 1), EpochOrder(fresh, split, 1));
}

TEST_P(BatchLoaderTest, EmptyEpochWhenDroppingTheOnlyPartialBatch) {
  const Split split = MakeSplit(3);
  LoaderOptions options = Options(4);
  options.drop_last = true;
  BatchLoader loader(split, options);
  loader.StartEpoch(0);
  Batch batch;
  EXPECT_FALSE(loader.Next(&batch));
}

// A run resumed from a checkpoint taken after k batches continues with
// batch k of the same epoch's order.
TEST_P(BatchLoaderTest, StartingAtABatchContinuesTheSameOrder) {
  const Split split = MakeSplit(50);
  BatchLoader whole(split, Options(7));
  const std::vector<int64_t> order = EpochOrder(whole, split, 2);
  BatchLoader resumed(split, Options(7));
  resumed.StartEpoch(2, /*first_batch=*/3);
  Batch batch;
  std::vector<int64_t> rest;
  ASSERT_TRUE(resumed.Next(&batch));
  EXPECT_EQ(batch.index, 3);
  do {
    for (int64_t r = 0; r < batch.size; ++r) {
      rest.push_back(IdentifyRow(split, batch, r));
    }
  } while (resumed.Next(&batch));
  EXPECT_EQ(rest, std::vector<int64_t>(order.begin() + 21, order.end()));
  // At the end of the epoch: nothing left; past it: an error.
  resumed.StartEpoch(2, resumed.batches_per_epoch());
  EXPECT_FALSE(resumed.Next(&batch));
  EXPECT_THROW(resumed.StartEpoch(2, resumed.batches_per_epoch() + 1),
               std::invalid_argument);
}

// (n + b - 1) / b once overflowed to a negative count: no batch at all.
TEST_P(BatchLoaderTest, HugeBatchSizeGivesOneBatchOfEverything) {
  const Split split = MakeSplit(5);
  BatchLoader loader(split, Options(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(loader.batches_per_epoch(), 1);
  loader.StartEpoch(0);
  Batch batch;
  ASSERT_TRUE(loader.Next(&batch));
  EXPECT_EQ(batch.size, 5);
  EXPECT_FALSE(loader.Next(&batch));
}

TEST_P(BatchLoaderTest, NextBeforeStartEpochThrows) {
  const Split split = MakeSplit(3);
  BatchLoader loader(split, Options(2));
  Batch batch;
  EXPECT_THROW(loader.Next(&batch), std::logic_error);
}

// A data set whose sample `bad` cannot be read (a file cut short while the
// loader reads it in place, say).
class FailingDataset : public Dataset {
 public:
  FailingDataset(int64_t n, int64_t bad) : n_(n), bad_(bad) {}
  int64_t size() const override { return n_; }
  const SampleSpec& input() const override { return input_; }
  const SampleSpec& target() const override { return target_; }
  void Read(int64_t i, void* input, void* target) const override {
    if (i == bad_) throw DataError("sample " + std::to_string(i) + " is gone");
    static_cast<uint8_t*>(input)[0] = static_cast<uint8_t>(i);
    std::memcpy(target, &i, sizeof(int32_t));
  }

 private:
  const int64_t n_, bad_;
  const SampleSpec input_{ElementType::kUint8, {1}};
  const SampleSpec target_{ElementType::kInt32, {}};
};

// An error on the prefetching thread reaches the caller of Next() (before,
// it ended the process through std::terminate), after the batches before
// it; every later Next() of the epoch says it again, and a new epoch runs.
TEST_P(BatchLoaderTest, AReadErrorOnAnyThreadReachesTheCaller) {
  LoaderOptions options;
  options.batch_size = 4;
  options.shuffle = false;
  options.prefetch = GetParam();
  BatchLoader loader(std::make_shared<FailingDataset>(20, 9), options);
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.StartEpoch(epoch);
    Batch batch;
    ASSERT_TRUE(loader.Next(&batch));  // Samples 0-3.
    ASSERT_TRUE(loader.Next(&batch));  // 4-7.
    EXPECT_EQ(batch.index, 1);
    try {
      loader.Next(&batch);  // 8-11: sample 9 fails.
      ADD_FAILURE() << "the batch holding sample 9 was handed out";
    } catch (const DataError& e) {
      EXPECT_STREQ(e.what(), "sample 9 is gone");
    }
    EXPECT_THROW(loader.Next(&batch), DataError);
  }
}

INSTANTIATE_TEST_SUITE_P(Prefetch, BatchLoaderTest, ::testing::Values(0, 1, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "Prefetch" + std::to_string(info.param);
                         });

TEST(BatchLoader, PrefetchedAndSynchronousBatchesAreIdentical) {
  const Split split = MakeSplit(77);
  LoaderOptions sync_options;
  sync_options.batch_size = 8;
  sync_options.seed = 5;
  sync_options.prefetch = 0;
  LoaderOptions async_options = sync_options;
  async_options.prefetch = 2;
  BatchLoader sync(split, sync_options), async(split, async_options);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    sync.StartEpoch(epoch);
    async.StartEpoch(epoch);
    Batch a, b;
    while (sync.Next(&a)) {
      ASSERT_TRUE(async.Next(&b));
      EXPECT_EQ(a.index, b.index);
      EXPECT_EQ(a.inputs, b.inputs);
      EXPECT_EQ(a.targets, b.targets);
    }
    EXPECT_FALSE(async.Next(&b));
  }
}

TEST(BatchLoader, RejectsBadOptions) {
  const Split split = MakeSplit(3);
  LoaderOptions options;
  options.batch_size = 0;
  EXPECT_THROW(BatchLoader(split, options), std::invalid_argument);
  options.batch_size = 2;
  options.prefetch = -1;
  EXPECT_THROW(BatchLoader(split, options), std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::data
