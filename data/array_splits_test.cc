#include "data/array_splits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "data/data_error.h"
#include "data/npy_file.h"
#include "data/npz_file.h"
#include "data/safetensors.h"
#include "data/testing/idx_writer.h"

namespace ringlet::data {
namespace {

using ::testing::HasSubstr;

// n samples of [1, 2, 2] uint8 (sample i all i), class ids i % 3 as int64:
// what numpy saves by default.
std::map<std::string, Array> Splits(int64_t n_train, int64_t n_test) {
  std::map<std::string, Array> out;
  for (const auto& [split, n] :
       {std::pair{"train", n_train}, {"test", n_test}}) {
    Array x;
    x.type = ElementType::kUint8;
    x.dims = {n, 1, 2, 2};
    Array y;
    y.type = ElementType::kInt64;
    y.dims = {n};
    y.bytes.resize(n * 8);
    for (int64_t i = 0; i < n; ++i) {
      x.bytes.insert(x.bytes.end(), 4, static_cast<uint8_t>(i));
      const int64_t id = i % 3;
      std::memcpy(y.bytes.data() + 8 * i, &id, 8);
    }
    out[std::string(split) + "_inputs"] = x;
    out[std::string(split) + "_targets"] = y;
  }
  return out;
}

void ExpectSplits(const ArraySplits& s) {
  EXPECT_EQ(s.classes, 3);
  ASSERT_EQ(s.train->size(), 7);
  ASSERT_EQ(s.test->size(), 4);
  EXPECT_EQ(s.train->input().Describe(), "uint8 {1, 2, 2}");
  EXPECT_EQ(s.train->target().Describe(), "int32 {}");
  uint8_t x[4];
  int32_t y = -1;
  s.train->Read(5, x, &y);
  EXPECT_EQ(x[3], 5);
  EXPECT_EQ(y, 2);
}

// The same four arrays as a folder of .npy files, an .npz archive and a
// .safetensors file.
TEST(ReadArraySplits, NpyFoldersNpzAndSafetensorsGiveTheSameData) {
  const std::string dir = testing::MakeTempDir("array_splits_test");
  const std::map<std::string, Array> arrays = Splits(7, 4);
  for (const auto& [name, array] : arrays) {
    testing::WriteFile(dir + "/" + name + ".npy", NpyBytes(array));
  }
  ExpectSplits(ReadArraySplits(dir, ArrayFormat::kNpy));
  testing::WriteFile(dir + "/d.npz", NpzBytes(arrays));
  ExpectSplits(ReadArraySplits(dir + "/d.npz", ArrayFormat::kNpy));
  SafetensorsFile file;
  for (const auto& [name, array] : arrays)
    file.tensors.emplace_back(name, array);
  testing::WriteFile(dir + "/d.safetensors", EncodeSafetensors(file));
  ExpectSplits(
      ReadArraySplits(dir + "/d.safetensors", ArrayFormat::kSafetensors));
}

TEST(ReadArraySplits, AMissingArrayOrNegativeIdIsAClearError) {
  const std::string dir = testing::MakeTempDir("array_splits_test_bad");
  std::map<std::string, Array> arrays = Splits(3, 2);
  arrays.erase("test_targets");
  testing::WriteFile(dir + "/d.npz", NpzBytes(arrays));
  EXPECT_THAT([&] { ReadArraySplits(dir + "/d.npz", ArrayFormat::kNpy); },
              ::testing::ThrowsMessage<DataError>(
                  HasSubstr("no array test_targets (it needs train_inputs, "
                            "train_targets, test_inputs and test_targets)")));
  arrays = Splits(3, 2);
  const int64_t negative = -4;
  std::memcpy(arrays["train_targets"].bytes.data() + 8, &negative, 8);
  testing::WriteFile(dir + "/n.npz", NpzBytes(arrays));
  EXPECT_THAT(
      [&] { ReadArraySplits(dir + "/n.npz", ArrayFormat::kNpy); },
      ::testing::ThrowsMessage<DataError>(HasSubstr("target 1 is negative")));
}

}  // namespace
}  // namespace ringlet::data
