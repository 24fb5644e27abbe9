#include "data/dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <set>

#include "data/batch_loader.h"
#include "data/data_error.h"

namespace ringlet::data {
namespace {

using ::testing::HasSubstr;

template <typename T>
Array ArrayOf(std::vector<int64_t> dims, const std::vector<T>& values) {
  Array a;
  a.type = ElementTypeOf<T>();
  a.dims = std::move(dims);
  a.bytes.resize(values.size() * sizeof(T));
  if (!values.empty())
    std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}

// n samples: input i is {i, i + 0.5} as float32 {2}, target i is float32
// {3 * i} of shape {1}.
DatasetPtr Regression(int n) {
  std::vector<float> x, y;
  for (int i = 0; i < n; ++i) {
    x.push_back(i);
    x.push_back(i + 0.5f);
    y.push_back(3.0f * i);
  }
  return ArrayDataset("regression", ArrayOf<float>({n, 2}, x),
                      ArrayOf<float>({n, 1}, y));
}

float InputOf(const Dataset& d, int64_t i) {
  float in[2], target;
  d.Read(i, in, &target);
  EXPECT_EQ(in[1], in[0] + 0.5f);
  EXPECT_EQ(target, 3 * in[0]);
  return in[0];
}

TEST(DatasetTest, ArraysGiveSamplesOfTheirShapeAndType) {
  const DatasetPtr d = Regression(5);
  EXPECT_EQ(d->size(), 5);
  EXPECT_EQ(d->input().Describe(), "float32 {2}");
  EXPECT_EQ(d->target().Describe(), "float32 {1}");
  EXPECT_EQ(InputOf(*d, 3), 3.0f);
  EXPECT_THROW(ArrayDataset("x", ArrayOf<float>({3, 2}, std::vector<float>(6)),
                            ArrayOf<float>({2}, {1, 2})),
               DataError);
}

// The caller's buffers, viewed: a change to them shows.
TEST(DatasetTest, BuffersTheCallerOwnsAreViewed) {
  std::vector<uint8_t> images = {1, 2, 3, 4, 5, 6};
  const std::vector<int32_t> labels = {2, 0, 1};
  const DatasetPtr d = BufferDataset(
      "mine", 3, images.data(), SampleSpec{ElementType::kUint8, {1, 2}},
      labels.data(), SampleSpec{ElementType::kInt32, {}}, 3);
  uint8_t x[2];
  int32_t y;
  images[4] = 50;
  d->Read(2, x, &y);
  EXPECT_EQ(x[0], 50);
  EXPECT_EQ(x[1], 6);
  EXPECT_EQ(y, 1);
  EXPECT_THROW(
      BufferDataset("bad", 3, images.data(),
                    SampleSpec{ElementType::kUint8, {1, 2}}, labels.data(),
                    SampleSpec{ElementType::kInt32, {}}, 2),
      DataError);  // A label of 2 in 2 classes.
  EXPECT_THROW(
      BufferDataset("none", 3, nullptr, SampleSpec{ElementType::kUint8, {1, 2}},
                    labels.data(), SampleSpec{ElementType::kInt32, {}}),
      DataError);
}

TEST(DatasetTest, ClassTargetsAreCheckedAgainstTheClasses) {
  ArrayDataset("ok", ArrayOf<uint8_t>({2, 1}, {0, 0}),
               ArrayOf<int64_t>({2}, {0, 9}), 10);
  try {
    ArrayDataset("bad", ArrayOf<uint8_t>({2, 1}, {0, 0}),
                 ArrayOf<int32_t>({2}, {3, 10}), 10);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad: target 1 is 10, outside 0..9"));
  }
  EXPECT_THROW(ArrayDataset("f", ArrayOf<uint8_t>({1, 1}, {0}),
                            ArrayOf<float>({1}, {0}), 10),
               DataError);
}

// A NaN or an infinity in the data is named with its sample (before: a
// NaN test image was scored like any, a NaN training image read as a
// diverging learning rate).
TEST(DatasetTest, NonFiniteValuesAreRefusedNamingTheirSample) {
  auto error = [](const Array& x, const Array& y) {
    try {
      ArrayDataset("d", x, y);
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_THAT(error(ArrayOf<float>({3, 2}, {0, 1, 2, 3, nan, 5}),
                    ArrayOf<int32_t>({3}, {0, 1, 2})),
              HasSubstr("d: sample 2's input holds nan (element 0 of float32 "
                        "{2}); fix it, or drop such samples"));
  EXPECT_THAT(error(ArrayOf<double>({2, 1}, {1, -1.0 / 0.0}),
                    ArrayOf<int32_t>({2}, {0, 1})),
              HasSubstr("sample 1's input holds -inf"));
  EXPECT_THAT(
      error(ArrayOf<float>({2, 1}, {1, 2}), ArrayOf<float>({2, 1}, {inf, 0})),
      HasSubstr("sample 0's target holds inf"));
  EXPECT_EQ(
      error(ArrayOf<float>({2, 1}, {1, 2}), ArrayOf<float>({2, 1}, {0, 1})),
      "");
}

// Images as numpy holds them: {H, W} seen as one channel, {H, W, C}
// (channels last) read as {C, H, W}, sample by sample.
TEST(DatasetTest, InputsReshapedOrReadChannelsFirst) {
  std::vector<uint8_t> pixels(2 * 2 * 3 * 4);  // 2 images {2, 3, 4} (HWC).
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<uint8_t>(i);
  const DatasetPtr hwc =
      ArrayDataset("hwc", ArrayOf<uint8_t>({2, 2, 3, 4}, pixels),
                   ArrayOf<int32_t>({2}, {0, 1}), 2);
  const DatasetPtr chw = ChannelsFirst(hwc);
  EXPECT_EQ(chw->input().Describe(), "uint8 {4, 2, 3}");
  EXPECT_EQ(chw->classes(), 2);
  uint8_t image[24];
  int32_t label = -1;
  chw->Read(1, image, &label);
  EXPECT_EQ(label, 1);
  for (int c = 0; c < 4; ++c) {
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 3; ++x) {
        EXPECT_EQ(image[(c * 2 + y) * 3 + x], 24 + (y * 3 + x) * 4 + c)
            << c << " " << y << " " << x;
      }
    }
  }
  const DatasetPtr one_channel = WithInputShape(
      ArrayDataset("hw",
                   ArrayOf<uint8_t>({2, 3, 8}, std::vector<uint8_t>(48, 7)),
                   ArrayOf<int32_t>({2}, {1, 0}), 2),
      {1, 3, 8});
  EXPECT_EQ(one_channel->input().Describe(), "uint8 {1, 3, 8}");
  one_channel->Read(0, image, &label);
  EXPECT_EQ(image[23], 7);
  EXPECT_THROW(WithInputShape(hwc, {5, 5}), DataError);
  EXPECT_THROW(ChannelsFirst(one_channel->input().shape.size() == 3
                                 ? WithInputShape(one_channel, {24})
                                 : one_channel),
               DataError);
}

TEST(DatasetTest, SubsetConcatAndHoldOutViewWithoutCopying) {
  const DatasetPtr d = Regression(10);
  const DatasetPtr odd = Subset(d, {1, 3, 5});
  EXPECT_EQ(InputOf(*odd, 2), 5.0f);
  EXPECT_THROW(Subset(d, {10}), DataError);
  const DatasetPtr both = Concat({odd, d});
  EXPECT_EQ(both->size(), 13);
  EXPECT_EQ(InputOf(*both, 2), 5.0f);
  EXPECT_EQ(InputOf(*both, 3), 0.0f);
  EXPECT_EQ(InputOf(*both, 12), 9.0f);
  const DatasetPtr other = ArrayDataset("ids", ArrayOf<float>({1, 2}, {0, 0}),
                                        ArrayOf<int32_t>({1}, {0}));
  EXPECT_THROW(Concat({d, other}), DataError);

  const auto [kept, held] = HoldOut(d, 0.3, 7);
  EXPECT_EQ(kept->size(), 7);
  EXPECT_EQ(held->size(), 3);
  std::set<float> seen;
  for (const DatasetPtr& part : {kept, held}) {
    for (int64_t i = 0; i < part->size(); ++i) seen.insert(InputOf(*part, i));
  }
  EXPECT_EQ(seen.size(), 10u);  // Each sample in exactly one part.
  const auto again = HoldOut(d, 0.3, 7).second;
  const auto other_seed = HoldOut(d, 0.3, 8).second;
  std::vector<float> a, b, c;
  for (int64_t i = 0; i < 3; ++i) {
    a.push_back(InputOf(*held, i));
    b.push_back(InputOf(*again, i));
    c.push_back(InputOf(*other_seed, i));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// The loader hands out any data set's samples: float inputs, targets as
// they are held.
TEST(DatasetTest, TheLoaderBatchesAnyDataSet) {
  LoaderOptions options;
  options.batch_size = 4;
  options.shuffle = false;
  options.prefetch = 0;
  BatchLoader loader(Regression(6), options);
  loader.StartEpoch(0);
  Batch batch;
  ASSERT_TRUE(loader.Next(&batch));
  ASSERT_TRUE(loader.Next(&batch));
  EXPECT_EQ(batch.size, 2);
  EXPECT_EQ(batch.input_shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(batch.input(1)[1], 5.5f);
  EXPECT_EQ(batch.targets_as<float>()[1], 15.0f);
  EXPECT_THROW(batch.targets_as<int32_t>(), DataError);
  // uint8 inputs scaled to [0, 1]; int16 ones converted as they are.
  BatchLoader bytes(ArrayDataset("b", ArrayOf<uint8_t>({1, 2}, {255, 51}),
                                 ArrayOf<int16_t>({1, 2}, {-3, 4})),
                    options);
  bytes.StartEpoch(0);
  ASSERT_TRUE(bytes.Next(&batch));
  EXPECT_EQ(batch.inputs, (std::vector<float>{1.0f, 51 / 255.0f}));
  EXPECT_EQ(batch.targets_as<int16_t>()[0], -3);
}

// A process's shards of each batch (DistributedSampler's share): the
// samples the whole batch holds at those places, cut as the whole batch's
// shards are, nothing else loaded.
TEST(DatasetTest, TheLoaderLoadsThisProcesssShardsOfEachBatch) {
  LoaderOptions whole, part;
  whole.batch_size = part.batch_size = 5;
  whole.prefetch = part.prefetch = 0;
  whole.seed = part.seed = 3;
  whole.layout = {3, {0, 3}};
  part.layout = {3, {1, 3}};  // Shards 1 and 2 of 3.
  BatchLoader all(Regression(12), whole), mine(Regression(12), part);
  all.StartEpoch(1);
  mine.StartEpoch(1);
  Batch a, h;
  int batches = 0;
  while (all.Next(&a)) {
    ASSERT_TRUE(mine.Next(&h));
    ++batches;
    EXPECT_EQ(h.size, a.size);
    const LocalBatch everything = a.Local(), local = h.Local();
    ASSERT_EQ(everything.shards.size(), 3u);
    ASSERT_EQ(local.shards.size(), 2u);
    EXPECT_EQ(local.size, a.size);
    EXPECT_TRUE(local.layout == part.layout);
    EXPECT_EQ(h.held, a.size - everything.shards[0].count);
    for (int s = 0; s < 2; ++s) {
      const Shard& want = everything.shards[s + 1];
      const Shard& got = local.shards[s];
      ASSERT_EQ(got.count, want.count);
      for (int64_t i = 0; i < got.count; ++i) {
        EXPECT_EQ(got.inputs.As<float>("test")[2 * i],
                  want.inputs.As<float>("test")[2 * i]);
        EXPECT_EQ(got.targets.As<float>("test")[i],
                  want.targets.As<float>("test")[i]);
      }
    }
    EXPECT_NO_THROW(CheckLocalBatch(local, part.layout, "test"));
  }
  EXPECT_EQ(batches, 3);  // 5, 5 and 2: the last has an empty shard.
  EXPECT_FALSE(mine.Next(&h));
  LoaderOptions bad = part;
  bad.layout = {3, {2, 4}};
  EXPECT_THROW(BatchLoader(Regression(12), bad), std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::data
