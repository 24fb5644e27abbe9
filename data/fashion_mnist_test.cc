#include "data/fashion_mnist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "data/data_error.h"
#include "data/testing/idx_writer.h"

namespace ringlet::data {
namespace {

using ::testing::AllOf;
using testing::Gzip;
using ::testing::HasSubstr;
using testing::IdxBytes;
using testing::MakeTempDir;
using testing::SyntheticLabel;
using testing::SyntheticPixel;
using testing::WriteFile;
using testing::WriteSyntheticFashionMnist;

std::string ErrorOf(const std::string& dir, const std::string& split) {
  try {
    LoadFashionMnistSplit(dir, split);
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no DataError for " << dir << " " << split;
  return "";
}

TEST(FashionMnist, LoadsBothSplitsWithPixelsAndLabelsInPlace) {
  const std::string dir = MakeTempDir("fm_valid");
  WriteSyntheticFashionMnist(dir, 30, 12);
  const FashionMnist data = LoadFashionMnist(dir);
  EXPECT_EQ(data.dir, dir);
  ASSERT_EQ(data.train.size(), 30);
  ASSERT_EQ(data.test.size(), 12);
  EXPECT_EQ(data.train.name, "train");
  EXPECT_EQ(data.test.name, "test");
  ASSERT_EQ(data.train.pixels.size(), 30u * kImagePixels);
  for (int64_t i = 0; i < 30; ++i) {
    EXPECT_EQ(data.train.labels[i], SyntheticLabel(i));
    for (int p = 0; p < kImagePixels; p += 97) {
      ASSERT_EQ(data.train.image(i)[p], SyntheticPixel(i, p)) << i << "," << p;
    }
  }
}

TEST(FashionMnist, ResolvesFolderFromFlagThenEnvironmentThenDefault) {
  unsetenv(kFashionMnistDirEnv);
  EXPECT_EQ(ResolveFashionMnistDir(""), kDefaultFashionMnistDir);
  setenv(kFashionMnistDirEnv, "/from/env", 1);
  EXPECT_EQ(ResolveFashionMnistDir(""), "/from/env");
  EXPECT_EQ(ResolveFashionMnistDir("/from/flag"), "/from/flag");
  setenv(kFashionMnistDirEnv, "", 1);
  EXPECT_EQ(ResolveFashionMnistDir(""), kDefaultFashionMnistDir);
  unsetenv(kFashionMnistDirEnv);
}

TEST(FashionMnist, RelativeFolderIsTakenFromWhereBazelRunWasTyped) {
  unsetenv("BUILD_WORKING_DIRECTORY");
  EXPECT_EQ(ResolveFashionMnistDir("data/fm"), "data/fm");
  setenv("BUILD_WORKING_DIRECTORY", "/home/me/project", 1);
  EXPECT_EQ(ResolveFashionMnistDir("data/fm"), "/home/me/project/data/fm");
  EXPECT_EQ(ResolveFashionMnistDir("/abs/fm"), "/abs/fm");
  unsetenv("BUILD_WORKING_DIRECTORY");
}

TEST(FashionMnist, MissingFolderSaysHowToInstall) {
  EXPECT_THAT(ErrorOf("/nonexistent/fashion", "train"),
              AllOf(HasSubstr("/nonexistent/fashion does not exist"),
                    HasSubstr("apt-get install dataset-fashion-mnist"),
                    HasSubstr("FASHION_MNIST_DIR")));
}

TEST(FashionMnist, MissingFileIsNamed) {
  const std::string dir = MakeTempDir("fm_missing_file");
  WriteSyntheticFashionMnist(dir, 4, 4);
  std::remove((dir + "/t10k-labels-idx1-ubyte.gz").c_str());
  EXPECT_NO_THROW(LoadFashionMnistSplit(dir, "train"));
  EXPECT_THAT(ErrorOf(dir, "test"),
              AllOf(HasSubstr(dir + "/t10k-labels-idx1-ubyte.gz is missing"),
                    HasSubstr("dataset-fashion-mnist")));
}

// Each of these was once reported as "missing".
TEST(FashionMnist, WhatStandsInPlaceOfAFileIsNamed) {
  const std::string dir = MakeTempDir("fm_odd_files");
  WriteSyntheticFashionMnist(dir, 4, 4);
  const std::string images = dir + "/train-images-idx3-ubyte.gz";
  const std::string labels = dir + "/train-labels-idx1-ubyte.gz";
  std::remove(images.c_str());
  ASSERT_EQ(::mkdir(images.c_str(), 0755), 0);
  EXPECT_THAT(ErrorOf(dir, "train"),
              HasSubstr(images + " is a folder, not a file"));
  ::rmdir(images.c_str());
  ASSERT_EQ(::mkfifo(images.c_str(), 0644), 0);
  EXPECT_THAT(ErrorOf(dir, "train"), HasSubstr(images + " is not a regular"));
  std::remove(images.c_str());
  ASSERT_EQ(::symlink(images.c_str(), images.c_str()), 0);  // A loop.
  EXPECT_THAT(ErrorOf(dir, "train"),
              HasSubstr(images + " is a loop of symbolic links"));
  std::remove(images.c_str());
  WriteSyntheticFashionMnist(dir, 4, 4);
  if (::geteuid() != 0) {  // Root reads everything.
    ASSERT_EQ(::chmod(labels.c_str(), 0), 0);
    EXPECT_THAT(ErrorOf(dir, "train"),
                HasSubstr(labels + " cannot be read (permission denied)"));
  }
}

TEST(FashionMnist, AFileGivenAsTheFolderIsNamed) {
  const std::string dir = MakeTempDir("fm_file_as_folder");
  WriteFile(dir + "/plain", "x");
  EXPECT_THAT(ErrorOf(dir + "/plain", "train"),
              HasSubstr(dir + "/plain is a file, not a folder"));
}

TEST(FashionMnist, UnknownSplit) {
  EXPECT_THAT(ErrorOf("/tmp", "validation"),
              HasSubstr("unknown Fashion-MNIST split 'validation'"));
}

TEST(FashionMnist, ImageAndLabelCountsMustAgree) {
  const std::string dir = MakeTempDir("fm_counts");
  WriteSyntheticFashionMnist(dir, 5, 5);
  WriteFile(dir + "/train-labels-idx1-ubyte.gz",
            Gzip(IdxBytes({4}, {1, 2, 3, 4})));
  EXPECT_THAT(ErrorOf(dir, "train"),
              AllOf(HasSubstr("train-labels-idx1-ubyte.gz holds 4 labels"),
                    HasSubstr("train-images-idx3-ubyte.gz holds 5 images")));
}

TEST(FashionMnist, ImagesMustBe28By28) {
  const std::string dir = MakeTempDir("fm_dims");
  WriteSyntheticFashionMnist(dir, 2, 2);
  WriteFile(dir + "/train-images-idx3-ubyte.gz",
            Gzip(IdxBytes({2, 32, 32}, std::vector<uint8_t>(2 * 32 * 32))));
  EXPECT_THAT(ErrorOf(dir, "train"),
              AllOf(HasSubstr("train-images-idx3-ubyte.gz"),
                    HasSubstr("images are 32x32, expected 28x28")));
}

TEST(FashionMnist, LabelsMustBeInRange) {
  const std::string dir = MakeTempDir("fm_labels");
  WriteSyntheticFashionMnist(dir, 3, 3);
  WriteFile(dir + "/t10k-labels-idx1-ubyte.gz",
            Gzip(IdxBytes({3}, {0, 9, 10})));
  EXPECT_THAT(ErrorOf(dir, "test"),
              AllOf(HasSubstr("t10k-labels-idx1-ubyte.gz"),
                    HasSubstr("label 10 at index 2 is outside 0..9")));
}

TEST(FashionMnist, EmptyImageFileIsAnError) {
  const std::string dir = MakeTempDir("fm_empty");
  WriteSyntheticFashionMnist(dir, 0, 1);
  EXPECT_THAT(ErrorOf(dir, "train"), HasSubstr("holds no images"));
}

TEST(FashionMnist, CorruptFilesAreReportedWithTheirPath) {
  const std::string dir = MakeTempDir("fm_corrupt");
  WriteSyntheticFashionMnist(dir, 3, 3);
  WriteFile(dir + "/train-images-idx3-ubyte.gz", "this is not gzip");
  EXPECT_THAT(ErrorOf(dir, "train"),
              AllOf(HasSubstr(dir + "/train-images-idx3-ubyte.gz"),
                    HasSubstr("not a gzip file")));
}

}  // namespace
}  // namespace ringlet::data
