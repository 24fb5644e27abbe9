#include "trainers/common/flags/trainer_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "data/data_error.h"
#include "data/npy_file.h"
#include "data/testing/idx_writer.h"

namespace ringlet::trainers {
namespace {

using ::testing::HasSubstr;

template <typename T>
data::Array ArrayOf(std::vector<int64_t> dims, const std::vector<T>& values) {
  data::Array a;
  a.type = data::ElementTypeOf<T>();
  a.dims = std::move(dims);
  a.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) {
    std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  }
  return a;
}

// A folder of the four .npy files: n training samples of float32 {2, 3}
// whose first value is the sample's index, int64 class ids i % 4.
// n training and `test` test samples of `sample`, sample i starting with
// i, class ids i % 4 saved as int64 (numpy's default).
std::string WriteNpyData(int n, int test,
                         std::vector<int64_t> sample = {2, 3}) {
  const std::string dir = data::testing::MakeTempDir("trainer_data_test");
  for (const auto& [split, count] :
       std::vector<std::pair<std::string, int>>{{"train", n}, {"test", test}}) {
    int64_t elements = 1;
    for (int64_t d : sample) elements *= d;
    std::vector<float> x(count * elements, 0.5f);
    std::vector<int64_t> y(count);
    for (int i = 0; i < count; ++i) {
      x[i * elements] = i;
      y[i] = i % 4;
    }
    std::vector<int64_t> dims = {count};
    dims.insert(dims.end(), sample.begin(), sample.end());
    data::testing::WriteFile(dir + "/" + split + "_inputs.npy",
                             data::NpyBytes(ArrayOf<float>(dims, x)));
    data::testing::WriteFile(dir + "/" + split + "_targets.npy",
                             data::NpyBytes(ArrayOf<int64_t>({count}, y)));
  }
  return dir;
}

float FirstValue(const data::Dataset& d, int64_t i, int32_t* label) {
  float x[6];
  d.Read(i, x, label);
  return x[0];
}

TEST(LoadTrainerDataTest, NpyFoldersGiveSamplesOfTheirShapeAndClassIds) {
  TrainerFlags flags;
  flags.dataset = "npy";
  flags.data_dir = WriteNpyData(40, 8);
  flags.limit = 30;
  flags.test_limit = 5;
  flags.validation = 0.2;
  const TrainerData d = LoadTrainerData(flags);
  EXPECT_EQ(d.classes, 4);
  // [n, height, width] is one channel.
  EXPECT_EQ(d.train->input().Describe(), "float32 {1, 2, 3}");
  EXPECT_EQ(d.train->target().Describe(), "int32 {}");  // As the loss reads.
  EXPECT_EQ(d.test->size(), 5);
  ASSERT_NE(d.validation, nullptr);
  EXPECT_EQ(d.validation->size(), 6);
  EXPECT_EQ(d.train->size(), 24);
  std::set<float> seen;
  for (const data::DatasetPtr& part : {d.train, d.validation}) {
    for (int64_t i = 0; i < part->size(); ++i) {
      int32_t label = -1;
      const float first = FirstValue(*part, i, &label);
      EXPECT_EQ(label, static_cast<int>(first) % 4);  // Kept together.
      seen.insert(first);
    }
  }
  EXPECT_EQ(seen.size(), 30u);  // The first 30, each once.
  EXPECT_EQ(*seen.rbegin(), 29.0f);
}

// Images saved channels last ({height, width, channels}, as PIL gives
// them) are refused naming the transpose, or read channels first when
// --input_layout=nhwc says so.
TEST(LoadTrainerDataTest, ChannelsLastImagesNeedTheirLayoutNamed) {
  TrainerFlags flags;
  flags.dataset = "npy";
  flags.data_dir = WriteNpyData(8, 4, {4, 5, 3});
  EXPECT_THAT([&] { LoadTrainerData(flags); },
              ::testing::ThrowsMessage<data::DataError>(HasSubstr(
                  "float32 {4, 5, 3} a sample, which looks channels last")));
  flags.input_layout = "nhwc";
  const TrainerData d = LoadTrainerData(flags);
  EXPECT_EQ(d.train->input().Describe(), "float32 {3, 4, 5}");
  float x[60];
  int32_t label = -1;
  d.train->Read(5, x, &label);
  EXPECT_EQ(x[0], 5.0f);  // Channel 0 of pixel (0, 0): the first element.
  EXPECT_EQ(label, 1);
  EXPECT_EQ(x[1], 0.5f);
  flags.input_layout = "nchw";
  flags.data_dir = WriteNpyData(8, 4, {3, 4, 5});
  EXPECT_EQ(LoadTrainerData(flags).train->input().Describe(),
            "float32 {3, 4, 5}");  // Channels first already.
  flags.dataset = "fashion_mnist";
  flags.input_layout = "nhwc";
  EXPECT_THROW(LoadTrainerData(flags), std::invalid_argument);
}

TEST(LoadTrainerDataTest, ACropPaddingThatLeavesNoImageIsRefused) {
  TrainerFlags flags;
  flags.dataset = "npy";
  flags.data_dir = WriteNpyData(8, 4, {1, 4, 6});
  flags.crop_padding = 3;
  EXPECT_THAT([&] { LoadTrainerData(flags); },
              ::testing::ThrowsMessage<std::invalid_argument>(
                  HasSubstr("--crop_padding is for --augment=crop")));
  flags.augment = "crop";
  EXPECT_EQ(LoadTrainerData(flags).train->size(), 8);
  flags.crop_padding = 4;
  EXPECT_THAT([&] { LoadTrainerData(flags); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr(
                  "--crop_padding=4 leaves some windows of the 4x6 images with "
                  "no image at all; give at most 3 (left out: 1, an eighth of "
                  "the side)")));
}

TEST(LoadTrainerDataTest, MissingOrWrongDataSaysWhatToDo) {
  TrainerFlags flags;
  flags.dataset = "cifar10";
  try {
    LoadTrainerData(flags);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs --data_dir"));
  }
  flags.data_dir = data::testing::MakeTempDir("trainer_data_test_empty");
  try {
    LoadTrainerData(flags);
    FAIL() << "expected DataError";
  } catch (const data::DataError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cifar-10-binary.tar.gz"));
  }
  flags.dataset = "mnist";
  try {
    LoadTrainerData(flags);
    FAIL() << "expected DataError";
  } catch (const data::DataError& e) {
    // Before: "Fashion-MNIST file ... is missing. Install ...".
    EXPECT_THAT(e.what(), HasSubstr("--dataset=mnist: no "));
    EXPECT_THAT(e.what(), HasSubstr("MNIST's four IDX files"));
  }
  flags.dataset = "npy";
  flags.data_dir = WriteNpyData(4, 2);
  data::testing::WriteFile(flags.data_dir + "/test_targets.npy",
                           data::NpyBytes(ArrayOf<float>({2}, {0.5f, 1.5f})));
  try {
    LoadTrainerData(flags);
    FAIL() << "expected DataError";
  } catch (const data::DataError& e) {
    EXPECT_THAT(e.what(), HasSubstr("are not class ids"));
  }
}

// Before: an empty training set ran to "loss 0.000, train acc 0.000", an
// empty test set to "test acc: 0.00", and a 0-d array ended in
// "cannot create std::vector larger than max_size()".
TEST(LoadTrainerDataTest, EmptySetsAndScalarsAreRefused) {
  TrainerFlags flags;
  flags.dataset = "npy";
  auto error = [&] {
    try {
      LoadTrainerData(flags);
    } catch (const data::DataError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  flags.data_dir = WriteNpyData(0, 2);
  EXPECT_EQ(error(),
            "--dataset=npy: the training set holds no samples (float32 {1, "
            "2, 3}); give it at least one");
  flags.data_dir = WriteNpyData(3, 0);
  EXPECT_THAT(error(), HasSubstr("the test set holds no samples"));
  flags.data_dir = WriteNpyData(3, 2);
  data::testing::WriteFile(flags.data_dir + "/train_inputs.npy",
                           data::NpyBytes(ArrayOf<float>({}, {7.0f})));
  EXPECT_THAT(error(),
              HasSubstr("train_inputs.npy holds a 0-d array (float32 []), not "
                        "samples; save an array [n, ...]"));
}

}  // namespace
}  // namespace ringlet::trainers
