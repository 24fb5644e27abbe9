// ImageFolder: classes in sorted order with their ids, PNG pixels exactly
// and JPEG's within compression, gray kept and promoted to RGB beside a
// colour image, alpha dropped, and each fault a DataError naming the file.
#include "data/image_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "data/data_error.h"
#include "data/image_decode.h"
#include "data/testing/idx_writer.h"
#include "data/testing/image_writer.h"

namespace ringlet::data {
namespace {

using testing::JpegBytes;
using testing::MakeTempDir;
using testing::PngBytes;
using testing::WriteFile;

// A w x h image of `channels` whose every value is base + its index.
std::vector<uint8_t> Pattern(int w, int h, int channels, int base) {
  std::vector<uint8_t> v(static_cast<size_t>(w * h * channels));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(base + i);
  return v;
}

std::string Folder(const std::string& root, const std::string& name) {
  const std::string path = root + "/" + name;
  ::mkdir(path.c_str(), 0755);
  return path;
}

std::string ErrorOf(const std::string& root) {
  try {
    ReadImageFolder(root);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ImageFolder, ClassesSortedPixelsChannelsFirst) {
  const std::string root = MakeTempDir("image_folder_sorted");
  // Folders made out of order; ids follow the sorted names.
  const std::string dog = Folder(root, "dog"), cat = Folder(root, "cat");
  WriteFile(dog + "/b.png", PngBytes(Pattern(4, 3, 1, 10), 4, 3, 1));
  WriteFile(dog + "/a.PNG", PngBytes(Pattern(4, 3, 1, 50), 4, 3, 1));
  WriteFile(cat + "/x.png", PngBytes(Pattern(4, 3, 1, 90), 4, 3, 1));
  WriteFile(cat + "/notes.txt", "not an image");
  const ImageFolder f = ReadImageFolder(root);
  EXPECT_EQ(f.classes, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(f.images.dims, (std::vector<int64_t>{3, 1, 3, 4}));
  const auto* ids = reinterpret_cast<const int32_t*>(f.targets.bytes.data());
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 3),
            (std::vector<int32_t>{0, 1, 1}));
  // cat/x, then dog/a.PNG before dog/b: each lossless.
  EXPECT_EQ(f.images.bytes[0], 90);
  EXPECT_EQ(f.images.bytes[12], 50);
  EXPECT_EQ(f.images.bytes[24 + 11], 21);
}

TEST(ImageFolder, ColourMakesEveryImageRgbAndAlphaIsDropped) {
  const std::string root = MakeTempDir("image_folder_rgb");
  const std::string a = Folder(root, "a"), b = Folder(root, "b");
  WriteFile(a + "/gray.png", PngBytes(Pattern(2, 2, 1, 7), 2, 2, 1));
  std::vector<uint8_t> rgba = Pattern(2, 2, 4, 0);
  for (int i = 0; i < 4; ++i) rgba[i * 4 + 3] = 255;  // Opaque.
  WriteFile(b + "/rgba.png", PngBytes(rgba, 2, 2, 4));
  const ImageFolder f = ReadImageFolder(root);
  ASSERT_EQ(f.images.dims, (std::vector<int64_t>{2, 3, 2, 2}));
  // The gray image repeated in each plane.
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(f.images.bytes[c * 4 + i], 7 + i);
  }
  // RGBA's pixels (r, g, b) = (4i, 4i+1, 4i+2), planes first.
  const uint8_t* second = f.images.bytes.data() + 12;
  EXPECT_EQ(second[0], 0);
  EXPECT_EQ(second[1], 4);
  EXPECT_EQ(second[4], 1);
  EXPECT_EQ(second[8 + 3], 14);
}

TEST(ImageFolder, JpegsDecodeNearTheirPixels) {
  const std::string root = MakeTempDir("image_folder_jpeg");
  const std::string a = Folder(root, "a");
  std::vector<uint8_t> flat(16 * 16 * 3, 200);
  WriteFile(a + "/x.jpg", JpegBytes(flat, 16, 16, 3));
  WriteFile(a + "/y.jpeg",
            JpegBytes(std::vector<uint8_t>(16 * 16, 40), 16, 16, 1));
  const ImageFolder f = ReadImageFolder(root);
  ASSERT_EQ(f.images.dims, (std::vector<int64_t>{2, 3, 16, 16}));
  for (size_t i = 0; i < 16 * 16 * 3; ++i) {
    ASSERT_NEAR(f.images.bytes[i], 200, 2) << i;
    ASSERT_NEAR(f.images.bytes[16 * 16 * 3 + i], 40, 2) << i;
  }
}

TEST(ImageFolder, EachFaultNamesItsFile) {
  const std::string root = MakeTempDir("image_folder_faults");
  EXPECT_NE(ErrorOf(root).find("no class folders"), std::string::npos);
  const std::string a = Folder(root, "a"), b = Folder(root, "b");
  WriteFile(a + "/1.png", PngBytes(Pattern(4, 4, 1, 0), 4, 4, 1));
  EXPECT_NE(ErrorOf(root).find(b + ": a class folder with no .png"),
            std::string::npos)
      << ErrorOf(root);
  WriteFile(b + "/2.png", PngBytes(Pattern(5, 4, 1, 0), 5, 4, 1));
  EXPECT_NE(ErrorOf(root).find(b + "/2.png is 5x4 pixels"), std::string::npos)
      << ErrorOf(root);
  WriteFile(b + "/2.png", "GIF89a...");
  EXPECT_NE(ErrorOf(root).find(b + "/2.png: neither a PNG nor a JPEG"),
            std::string::npos);
  const std::string png = PngBytes(Pattern(4, 4, 1, 0), 4, 4, 1);
  WriteFile(b + "/2.png", png.substr(0, png.size() - 20));
  EXPECT_NE(ErrorOf(root).find(b + "/2.png: a damaged PNG"), std::string::npos)
      << ErrorOf(root);
  const std::string jpg = JpegBytes(Pattern(8, 8, 1, 0), 8, 8, 1);
  WriteFile(b + "/2.png", png);
  WriteFile(b + "/3.jpg", jpg.substr(0, jpg.size() / 2));
  EXPECT_NE(ErrorOf(root).find(b + "/3.jpg: not a readable JPEG (Invalid JPEG"),
            std::string::npos)
      << ErrorOf(root);
  // Cut in its scan: the header reads, the pixels do not.
  const std::string noisy = JpegBytes(Pattern(64, 64, 3, 0), 64, 64, 3);
  WriteFile(b + "/3.jpg", noisy.substr(0, noisy.size() - 400));
  EXPECT_NE(ErrorOf(root).find(b + "/3.jpg: a damaged JPEG"), std::string::npos)
      << ErrorOf(root);
  ::remove((b + "/3.jpg").c_str());
  // A test split's classes must be the training split's.
  const std::string test = MakeTempDir("image_folder_test_split");
  WriteFile(Folder(test, "zebra") + "/1.png", png);
  try {
    ReadImageFolder(test, {"a", "b"});
    ADD_FAILURE();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "class 'zebra' is not among the training split's (a, b)"),
              std::string::npos)
        << e.what();
  }
  const ImageFolder ok = ReadImageFolder(root);
  EXPECT_EQ(ok.files, 2);
  EXPECT_EQ(ok.paths, (std::vector<std::string>{a + "/1.png", b + "/2.png"}));
}

// Unlabelled images for predictions: one file, or a folder's files.
TEST(ImageFolder, ImagesOfAFileOrAFolder) {
  const std::string dir = MakeTempDir("images_unlabelled");
  WriteFile(dir + "/b.png", PngBytes(Pattern(3, 2, 1, 5), 3, 2, 1));
  WriteFile(dir + "/a.jpg", JpegBytes(std::vector<uint8_t>(6, 100), 3, 2, 1));
  WriteFile(dir + "/readme.txt", "text");
  const ImageFolder both = ReadImages(dir);
  EXPECT_EQ(both.paths,
            (std::vector<std::string>{dir + "/a.jpg", dir + "/b.png"}));
  EXPECT_EQ(both.images.dims, (std::vector<int64_t>{2, 1, 2, 3}));
  EXPECT_EQ(both.images.bytes[6], 5);
  const ImageFolder one = ReadImages(dir + "/b.png", 3);
  EXPECT_EQ(one.images.dims, (std::vector<int64_t>{1, 3, 2, 3}));
  EXPECT_TRUE(IsImageFileName("X.JPEG"));
  EXPECT_FALSE(IsImageFileName("x.gif"));
  EXPECT_THROW(ReadImages(MakeTempDir("images_none")), DataError);
}

}  // namespace
}  // namespace ringlet::data
