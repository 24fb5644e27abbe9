#include "data/fashion_mnist.h"

#include <sys/stat.h>

#include <cstdlib>

#include "data/data_error.h"
#include "data/idx_file.h"

namespace ringlet::data {
namespace {

constexpr char kInstallHint[] =
    "Install the data set with `apt-get install dataset-fashion-mnist` (or "
    "run ./bazelw once), or point --data_dir or $FASHION_MNIST_DIR at a "
    "folder holding train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
    "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz.";

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string RequireFile(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  if (!IsFile(path)) {
    throw DataError("Fashion-MNIST file " + path + " is missing. " +
                    kInstallHint);
  }
  return path;
}

}  // namespace

std::string ResolveFashionMnistDir(const std::string& flag_value) {
  std::string dir = flag_value;
  if (dir.empty()) {
    const char* env = std::getenv(kFashionMnistDirEnv);
    dir = env != nullptr && env[0] != '\0' ? env : kDefaultFashionMnistDir;
  }
  // Under `bazel run` the program starts in its runfiles folder; a relative
  // path means the folder the user typed the command in.
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (dir[0] != '/' && cwd != nullptr && cwd[0] != '\0') {
    dir = std::string(cwd) + "/" + dir;
  }
  return dir;
}

Split LoadFashionMnistSplit(const std::string& dir, const std::string& split) {
  if (split != "train" && split != "test") {
    throw DataError("unknown Fashion-MNIST split '" + split +
                    "'; use train or test");
  }
  if (!IsDirectory(dir)) {
    throw DataError("Fashion-MNIST folder " + dir + " does not exist. " +
                    kInstallHint);
  }
  const std::string prefix = split == "train" ? "train" : "t10k";
  const std::string images_path =
      RequireFile(dir, prefix + "-images-idx3-ubyte.gz");
  const std::string labels_path =
      RequireFile(dir, prefix + "-labels-idx1-ubyte.gz");

  IdxArray images = ReadIdxGz(images_path, /*expected_rank=*/3);
  if (images.dims[1] != kImageRows || images.dims[2] != kImageCols) {
    throw DataError(images_path + ": images are " +
                    std::to_string(images.dims[1]) + "x" +
                    std::to_string(images.dims[2]) + ", expected 28x28");
  }
  if (images.dims[0] == 0) {
    throw DataError(images_path + ": the file holds no images");
  }
  IdxArray labels = ReadIdxGz(labels_path, /*expected_rank=*/1);
  if (labels.dims[0] != images.dims[0]) {
    throw DataError(labels_path + " holds " + std::to_string(labels.dims[0]) +
                    " labels but " + images_path + " holds " +
                    std::to_string(images.dims[0]) +
                    " images; the two files must come from the same split");
  }

  Split out;
  out.name = split;
  out.pixels = std::move(images.data);
  out.labels.resize(labels.data.size());
  for (size_t i = 0; i < labels.data.size(); ++i) {
    const int label = labels.data[i];
    if (label >= kNumClasses) {
      throw DataError(labels_path + ": label " + std::to_string(label) +
                      " at index " + std::to_string(i) + " is outside 0..9");
    }
    out.labels[i] = label;
  }
  return out;
}

FashionMnist LoadFashionMnist(const std::string& dir) {
  FashionMnist data;
  data.dir = dir;
  data.train = LoadFashionMnistSplit(dir, "train");
  data.test = LoadFashionMnistSplit(dir, "test");
  return data;
}

}  // namespace ringlet::data
