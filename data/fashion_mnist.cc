#include "data/fashion_mnist.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "data/data_error.h"
#include "data/idx_file.h"

namespace ringlet::data {
namespace {

constexpr char kInstallHint[] =
    "Install the data set with `apt-get install dataset-fashion-mnist` (or "
    "run ./bazelw once), or point --data_dir or $FASHION_MNIST_DIR at a "
    "folder holding train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
    "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz.";

// What is wrong with `path` as a `want` ("file" or "folder"), or "" when
// nothing is: missing, a folder where a file should be, a FIFO, a loop of
// symbolic links, no permission. Each once read "missing".
std::string ProblemWith(const std::string& path, bool want_folder) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    switch (errno) {
      case ENOENT:
        return want_folder ? "does not exist" : "is missing";
      case ELOOP:
        return "is a loop of symbolic links";
      case EACCES:
        return "cannot be reached: permission denied on a folder on its way";
      case ENOTDIR:
        return "cannot be reached: a part of its path is a file, not a folder";
      default:
        return std::string("cannot be read (") + std::strerror(errno) + ")";
    }
  }
  if (want_folder) {
    if (!S_ISDIR(st.st_mode)) return "is a file, not a folder";
    if (::access(path.c_str(), R_OK | X_OK) != 0) {
      return "cannot be read (permission denied)";
    }
    return "";
  }
  if (S_ISDIR(st.st_mode)) return "is a folder, not a file";
  if (!S_ISREG(st.st_mode)) {
    return "is not a regular file (a FIFO, socket or device)";
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return "cannot be read (permission denied)";
  }
  return "";
}

std::string RequireFile(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  const std::string problem = ProblemWith(path, /*want_folder=*/false);
  if (!problem.empty()) {
    throw DataError("Fashion-MNIST file " + path + " " + problem + ". " +
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
  const std::string problem = ProblemWith(dir, /*want_folder=*/true);
  if (!problem.empty()) {
    throw DataError("Fashion-MNIST folder " + dir + " " + problem + ". " +
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
