#include "data/transforms.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <set>

#include "data/batch_loader.h"
#include "data/dataset.h"

namespace ringlet::data {
namespace {

// A {C, H, W} image whose value at (c, y, x) is 100c + 10y + x + 1.
std::vector<float> Image(int c, int h, int w) {
  std::vector<float> x(c * h * w);
  for (int k = 0; k < c; ++k)
    for (int y = 0; y < h; ++y)
      for (int i = 0; i < w; ++i)
        x[(k * h + y) * w + i] = 100 * k + 10 * y + i + 1;
  return x;
}

TEST(TransformsTest, NormalizeIsPerChannel) {
  std::vector<float> x = Image(2, 1, 2);  // {1, 2}, {101, 102}
  SampleRng rng(1);
  Normalize({1, 101}, {0.5f, 2})(x.data(), {2, 1, 2}, rng);
  EXPECT_EQ(x, (std::vector<float>{0, 2, 0, 0.5f}));
  EXPECT_THROW(Normalize({0}, {0}), std::invalid_argument);
  EXPECT_THROW(Normalize({0, 1, 2}, {1, 1, 1})(x.data(), {2, 1, 2}, rng),
               std::invalid_argument);
}

// Every crop is the padded image's window: each value is 0 (padding) or
// the original's at the same offset everywhere; offsets cover [-p, p].
TEST(TransformsTest, RandomCropTakesAWindowOfThePaddedImage) {
  const std::vector<float> original = Image(2, 5, 6);
  const Transform crop = RandomCrop(2);
  std::set<std::pair<int, int>> offsets;
  for (int s = 0; s < 400; ++s) {
    std::vector<float> x = original;
    SampleRng rng = RngFor(3, 0, s);
    crop(x.data(), {2, 5, 6}, rng);
    // The offset from a value of the original in the crop.
    int dy = 99, dx = 99;
    for (int k = 0; k < 2 && dy == 99; ++k)
      for (int y = 0; y < 5 && dy == 99; ++y)
        for (int i = 0; i < 6; ++i) {
          const float v = x[(k * 5 + y) * 6 + i];
          if (v != 0) {
            const int sv = static_cast<int>(v) - 1 - 100 * k;
            dy = sv / 10 - y;
            dx = sv % 10 - i;
            break;
          }
        }
    ASSERT_NE(dy, 99);
    for (int k = 0; k < 2; ++k)
      for (int y = 0; y < 5; ++y)
        for (int i = 0; i < 6; ++i) {
          const int sy = y + dy, sx = i + dx;
          const float want = sy < 0 || sy >= 5 || sx < 0 || sx >= 6
                                 ? 0.0f
                                 : original[(k * 5 + sy) * 6 + sx];
          ASSERT_EQ(x[(k * 5 + y) * 6 + i], want) << s;
        }
    offsets.insert({dy, dx});
  }
  EXPECT_EQ(offsets.size(), 25u);  // Every offset in [-2, 2]^2.
}

// Crop and flip over random image shapes, 1x1 up to wider than the
// padding, against the padded window computed pixel by pixel, with guard
// values on both sides of the image that neither may touch (under ASan,
// CI's --config=asan, a write past the image is also a crash).
TEST(TransformsTest, CropAndFlipStayInsideImagesOfAnyShape) {
  constexpr float kGuard = -7.5f;
  constexpr int64_t kGuardSize = 64;
  SampleRng shapes(42);
  for (int trial = 0; trial < 3000; ++trial) {
    const int64_t c = 1 + shapes.Below(3);
    const int64_t h = 1 + shapes.Below(trial < 1000 ? 3 : 12);
    const int64_t w = 1 + shapes.Below(trial < 1000 ? 3 : 12);
    const int padding = static_cast<int>(shapes.Below(9));
    const std::vector<float> original = Image(c, h, w);
    std::vector<float> buffer(kGuardSize + c * h * w + kGuardSize, kGuard);
    std::copy(original.begin(), original.end(), buffer.begin() + kGuardSize);
    float* x = buffer.data() + kGuardSize;
    // The offset the crop draws, from a copy of its random source.
    SampleRng rng = RngFor(5, trial, trial);
    SampleRng peek = rng;
    const int64_t dy = peek.Below(2 * padding + 1) - padding;
    const int64_t dx = peek.Below(2 * padding + 1) - padding;
    RandomCrop(padding)(x, {c, h, w}, rng);
    for (int64_t k = 0; k < c; ++k)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t i = 0; i < w; ++i) {
          const int64_t sy = y + dy, sx = i + dx;
          const float want = sy < 0 || sy >= h || sx < 0 || sx >= w
                                 ? 0.0f
                                 : original[(k * h + sy) * w + sx];
          ASSERT_EQ(x[(k * h + y) * w + i], want)
              << c << "x" << h << "x" << w << " padding " << padding
              << " offset " << dy << "," << dx;
        }
    RandomHorizontalFlip(1.0)(x, {c, h, w}, rng);
    for (int64_t g = 0; g < kGuardSize; ++g) {
      ASSERT_EQ(buffer[g], kGuard) << c << "x" << h << "x" << w;
      ASSERT_EQ(buffer[kGuardSize + c * h * w + g], kGuard)
          << c << "x" << h << "x" << w;
    }
  }
}

// --augment=crop's default padding is an eighth of the side: 4 for 28x28
// and 32x32 (torchvision's recipes), 1 for 8x8 digits, where 4 would crop
// half the image away.
TEST(TransformsTest, TheDefaultCropPaddingScalesWithTheImage) {
  EXPECT_EQ(CropPaddingOf({1, 28, 28}), 4);
  EXPECT_EQ(CropPaddingOf({3, 32, 32}), 4);
  EXPECT_EQ(CropPaddingOf({1, 8, 8}), 1);
  EXPECT_EQ(CropPaddingOf({3, 96, 64}), 8);
  EXPECT_EQ(CropPaddingOf({1, 2, 2}), 1);
  for (const int64_t side : {8, 32}) {
    // Pixel (y, x) holds y * side + x + 1; the centre's value says where
    // the window moved.
    const Transform crop = AugmentationsNamed("crop").front();
    int64_t widest = 0;
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<float> x(side * side);
      for (int64_t i = 0; i < side * side; ++i) x[i] = i + 1;
      SampleRng rng = RngFor(3, 0, trial);
      crop(x.data(), {1, side, side}, rng);
      const int64_t centre = side / 2,
                    moved = static_cast<int64_t>(x[centre * side + centre]) - 1;
      widest = std::max({widest, std::abs(moved / side - centre),
                         std::abs(moved % side - centre)});
    }
    EXPECT_EQ(widest, side / 8) << side << "x" << side;
  }
}

TEST(TransformsTest, FlipMirrorsAboutHalfTheTime) {
  const std::vector<float> original = Image(3, 2, 4);
  const Transform flip = RandomHorizontalFlip(0.5);
  int flipped = 0;
  for (int s = 0; s < 1000; ++s) {
    std::vector<float> x = original;
    SampleRng rng = RngFor(1, 2, s);
    flip(x.data(), {3, 2, 4}, rng);
    if (x == original) continue;
    ++flipped;
    for (int r = 0; r < 6; ++r)
      for (int i = 0; i < 4; ++i)
        ASSERT_EQ(x[r * 4 + i], original[r * 4 + 3 - i]);
  }
  EXPECT_GT(flipped, 440);
  EXPECT_LT(flipped, 560);
  EXPECT_THROW(AugmentationsNamed("crop,rotate"), std::invalid_argument);
  try {
    AugmentationsNamed("flip,flip");
    FAIL() << "a repeated name was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "'flip' is given twice; use crop, flip or crop,flip");
  }
  EXPECT_TRUE(AugmentationsNamed("").empty());
  EXPECT_EQ(AugmentationsNamed("crop,flip").size(), 2u);
}

// Augmented batches depend on (seed, epoch, sample) alone: the same with
// or without prefetching, in any batch size; another epoch differs.
TEST(TransformsTest, TheLoadersAugmentationIsTheSameWhateverTheBatching) {
  const int n = 10;
  Array inputs;
  inputs.type = ElementType::kUint8;
  inputs.dims = {n, 1, 4, 4};
  for (int i = 0; i < n * 16; ++i) inputs.bytes.push_back(i % 251);
  Array targets;
  targets.type = ElementType::kInt32;
  targets.dims = {n};
  targets.bytes.assign(n * 4, 0);
  const DatasetPtr d = ArrayDataset("t", inputs, targets);
  auto epoch_of = [&](int64_t batch, int prefetch, int64_t epoch) {
    LoaderOptions o;
    o.batch_size = batch;
    o.prefetch = prefetch;
    o.seed = 9;
    o.transforms = AugmentationsNamed("crop,flip");
    BatchLoader loader(d, o);
    loader.StartEpoch(epoch);
    std::vector<float> all;
    Batch b;
    while (loader.Next(&b))
      all.insert(all.end(), b.inputs.begin(), b.inputs.end());
    return all;
  };
  const std::vector<float> a = epoch_of(4, 0, 1);
  EXPECT_EQ(a, epoch_of(3, 2, 1));
  EXPECT_NE(a, epoch_of(4, 0, 2));
}

}  // namespace
}  // namespace ringlet::data
