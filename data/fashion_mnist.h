// The Fashion-MNIST data set in memory: 28x28 grey images in 10 classes,
// 60,000 for training and 10,000 for testing (Xiao, Rasul and Vollgraf 2017).
//
// The four original files are read from one folder; by default Debian's
// package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist).
#ifndef RINGLET_DATA_FASHION_MNIST_H_
#define RINGLET_DATA_FASHION_MNIST_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringlet::data {

inline constexpr int kImageRows = 28;
inline constexpr int kImageCols = 28;
inline constexpr int kImagePixels = kImageRows * kImageCols;
inline constexpr int kNumClasses = 10;

inline constexpr char kDefaultFashionMnistDir[] =
    "/usr/share/datasets/fashion-mnist";
inline constexpr char kFashionMnistDirEnv[] = "FASHION_MNIST_DIR";

// d2l's text labels, indexed by class.
inline constexpr std::array<std::string_view, kNumClasses> kClassNames = {
    "t-shirt", "trouser", "pullover", "dress", "coat",
    "sandal",  "shirt",   "sneaker",  "bag",   "ankle boot"};

// One split: uint8 pixels, image-major (image i at pixels[i * 784]), and one
// int32 label in [0, 10) per image.
struct Split {
  std::string name;  // "train" or "test"
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  const uint8_t* image(int64_t i) const { return &pixels[i * kImagePixels]; }
};

struct FashionMnist {
  std::string dir;  // The folder the files were read from.
  Split train;
  Split test;
};

// The folder to read: `flag_value` when not empty, else $FASHION_MNIST_DIR
// when set and not empty, else the Debian default. Under `bazel run`, a
// relative path is taken from the folder the command was typed in.
std::string ResolveFashionMnistDir(const std::string& flag_value = "");

// Reads one split ("train" or "test") from `dir`. Throws DataError naming
// the file and the problem when a file is missing or malformed, the counts
// of images and labels differ, images are not 28x28, or a label is outside
// 0..9; a missing folder or file also says how to install the data set.
Split LoadFashionMnistSplit(const std::string& dir, const std::string& split);

// Reads both splits.
FashionMnist LoadFashionMnist(const std::string& dir);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_FASHION_MNIST_H_
