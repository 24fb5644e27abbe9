#include "data/file_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "data/data_error.h"
#include "data/idx_file.h"
#include "data/npy_file.h"
#include "data/testing/idx_writer.h"

namespace ringlet::data {
namespace {

using ::testing::HasSubstr;
using testing::MakeTempDir;
using testing::WriteFile;

template <typename T>
Array ArrayOf(std::vector<int64_t> dims, const std::vector<T>& values) {
  Array a;
  a.type = ElementTypeOf<T>();
  a.dims = std::move(dims);
  a.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) {
    std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  }
  return a;
}

// Samples read in place give what the whole array holds.
TEST(FileDatasetTest, NpyAndIdxInputsReadInPlace) {
  const std::string dir = MakeTempDir("file_dataset_test");
  std::vector<float> x(5 * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * i;
  const Array inputs = ArrayOf<float>({5, 2, 3}, x);
  WriteFile(dir + "/x.npy", NpyBytes(inputs));
  FileLayout layout;
  const Array header = ReadNpyLayout(dir + "/x.npy", &layout);
  EXPECT_TRUE(header.bytes.empty());
  const DatasetPtr d =
      FileInputsDataset(dir + "/x.npy", header, layout, {2, 3},
                        ArrayOf<int32_t>({5}, {0, 1, 2, 1, 0}), 3);
  EXPECT_EQ(d->size(), 5);
  EXPECT_EQ(d->input().Describe(), "float32 {2, 3}");
  float sample[6];
  int32_t label = -1;
  d->Read(3, sample, &label);
  EXPECT_EQ(label, 1);
  EXPECT_EQ(sample[0], 0.5f * 18);
  EXPECT_EQ(sample[5], 0.5f * 23);
  // IDX: big-endian int16 values, a 2 x 2 image read as {1, 2, 2}.
  WriteFile(
      dir + "/i.idx",
      testing::IdxBytes(
          {2, 2, 2}, {0, 1, 0, 2, 0, 3, 0, 4, 1, 0, 1, 1, 1, 2, 1, 3}, 0x0b));
  const Array idx = ReadIdxLayout(dir + "/i.idx", &layout);
  const DatasetPtr images = FileInputsDataset(
      dir + "/i.idx", idx, layout, {1, 2, 2}, ArrayOf<int32_t>({2}, {0, 1}));
  int16_t pixels[4];
  images->Read(1, pixels, &label);
  EXPECT_EQ(pixels[0], 256);
  EXPECT_EQ(pixels[3], 259);
  EXPECT_THROW(FileInputsDataset(dir + "/i.idx", idx, layout, {3},
                                 ArrayOf<int32_t>({2}, {0, 1})),
               DataError);
}

// Read in place, a sample with a NaN is refused when it is read, naming
// the file and the sample.
TEST(FileDatasetTest, ANonFiniteSampleReadInPlaceIsNamed) {
  const std::string dir = MakeTempDir("file_dataset_test_nan");
  std::vector<float> x(4 * 2, 1.0f);
  x[5] = std::numeric_limits<float>::infinity();
  WriteFile(dir + "/x.npy", NpyBytes(ArrayOf<float>({4, 2}, x)));
  FileLayout layout;
  const Array header = ReadNpyLayout(dir + "/x.npy", &layout);
  const DatasetPtr d = FileInputsDataset(dir + "/x.npy", header, layout, {2},
                                         ArrayOf<int32_t>({4}, {0, 1, 0, 1}));
  float sample[2];
  int32_t label = 0;
  d->Read(1, sample, &label);
  try {
    d->Read(2, sample, &label);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(
        std::string(e.what()).find(dir + "/x.npy: sample 2's input holds "
                                         "inf (element 1 of float32 {2})"),
        std::string::npos)
        << e.what();
  }
}

TEST(FileDatasetTest, CompressedFilesCannotBeReadInPlace) {
  const std::string dir = MakeTempDir("file_dataset_test_gz");
  WriteFile(dir + "/x.npy.gz",
            testing::Gzip(NpyBytes(ArrayOf<float>({1}, {1}))));
  FileLayout layout;
  try {
    ReadNpyLayout(dir + "/x.npy.gz", &layout);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot be read in place"));
  }
}

TEST(FileDatasetTest, CifarImagesReadInPlace) {
  const std::string dir = MakeTempDir("file_dataset_test_cifar");
  for (int f = 1; f <= 5; ++f) {
    std::string records;
    for (int r = 0; r < 3; ++r) {
      const int image = (f - 1) * 3 + r;
      records += static_cast<char>(image % 10);
      for (int p = 0; p < kCifarImageBytes; ++p) {
        records += static_cast<char>((image * 11 + p) & 0xff);
      }
    }
    WriteFile(dir + "/data_batch_" + std::to_string(f) + ".bin", records);
  }
  const DatasetPtr d = CifarFilesDataset(dir, CifarKind::k10, "train");
  EXPECT_EQ(d->size(), 15);
  EXPECT_EQ(d->classes(), 10);
  std::vector<uint8_t> image(kCifarImageBytes);
  int32_t label = -1;
  d->Read(13, image.data(), &label);
  EXPECT_EQ(label, 3);
  EXPECT_EQ(image[0], (13 * 11) & 0xff);
  EXPECT_EQ(image[3071], (13 * 11 + 3071) & 0xff);
  // The same samples as the reader that holds them all.
  const CifarImages all = LoadCifarSplit(dir, CifarKind::k10, "train");
  for (int64_t i = 0; i < 15; ++i) {
    d->Read(i, image.data(), &label);
    EXPECT_EQ(label, all.labels[i]);
    EXPECT_EQ(std::memcmp(image.data(),
                          all.images.bytes.data() + i * kCifarImageBytes,
                          kCifarImageBytes),
              0);
  }
}

}  // namespace
}  // namespace ringlet::data
