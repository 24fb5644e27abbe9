#include "trainers/common/flags/trainer_data.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "data/array_splits.h"
#include "data/batch_loader.h"
#include "data/byte_source.h"
#include "data/cifar.h"
#include "data/data_error.h"
#include "data/fashion_mnist.h"
#include "data/file_dataset.h"
#include "data/idx_file.h"
#include "data/image_folder.h"
#include "data/npy_file.h"
#include "data/npz_file.h"
#include "data/safetensors.h"
#include "data/transforms.h"
#include "trainers/common/outputs/metrics.h"
#include "trainers/common/outputs/output_files.h"

namespace ringlet::trainers {
namespace {

// Arrays saved from numpy as images, {channels, height, width} a sample:
// {height, width} is one channel; channels last (--input_layout=nhwc) are
// read channels first, and without it an input that looks channels last
// (a last axis of 1, 3 or 4, smaller than the others) is refused, naming
// the transpose, rather than trained as C*H channels of W x 1 images.
data::DatasetPtr AsImages(data::DatasetPtr d, const TrainerFlags& flags,
                          const std::string& source = "") {
  const std::vector<int64_t>& s = d->input().shape;
  const std::string what =
      (source.empty() ? "--dataset=" + flags.dataset : source) + " holds " +
      d->input().Describe();
  if (flags.input_layout == "nhwc") {
    if (s.size() != 3) {
      throw data::DataError(what +
                            " a sample; --input_layout=nhwc takes images "
                            "[n, height, width, channels]");
    }
    return data::ChannelsFirst(std::move(d));
  }
  if (s.size() == 2) return data::WithInputShape(d, {1, s[0], s[1]});
  if (s.size() == 3 && (s[2] == 1 || s[2] == 3 || s[2] == 4) && s[2] < s[0] &&
      s[2] < s[1]) {
    throw data::DataError(
        what +
        " a sample, which looks channels last ({height, width, "
        "channels}); save it channels first (x.transpose(0, 3, 1, 2)) "
        "or give --input_layout=nhwc");
  }
  return d;
}

// numpy's four arrays at `path` (data::ReadArraySplits), as images.
void TakeArraySplits(const std::string& path, data::ArrayFormat format,
                     const TrainerFlags& flags, TrainerData* out) {
  data::ArraySplits splits = data::ReadArraySplits(path, format);
  out->train = AsImages(std::move(splits.train), flags);
  out->test = AsImages(std::move(splits.test), flags);
  out->classes = splits.classes;
  out->files = {path};
}

bool EndsWith(const std::string& text, const std::string& ending) {
  return text.size() >= ending.size() &&
         text.compare(text.size() - ending.size(), ending.size(), ending) == 0;
}

// ROOT/train and ROOT/test (or ROOT/val): torchvision's ImageFolder
// layout, the test split's classes the training split's.
void TakeImageFolders(const TrainerFlags& flags, TrainerData* out) {
  if (flags.data_dir.empty()) {
    throw std::invalid_argument(
        "--dataset=image_folder needs --data_dir: a folder holding train/ "
        "and test/ (or val/), each a folder per class of PNG or JPEG images");
  }
  const std::string root = ResolveUserPath(flags.data_dir);
  std::string test = root + "/test";
  struct stat st;
  if (::stat(test.c_str(), &st) != 0 &&
      ::stat((root + "/val").c_str(), &st) == 0) {
    test = root + "/val";
  }
  for (const std::string& dir : {root + "/train", test}) {
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw data::DataError("--dataset=image_folder: no folder " + dir +
                            "; --data_dir holds train/ and test/ (or val/), "
                            "each a folder per class of PNG or JPEG images");
    }
  }
  data::ImageFolder train = data::ReadImageFolder(root + "/train");
  // A gray training split beside a colour test split is read as RGB too.
  data::ImageFolder held = data::ReadImageFolder(
      test, train.classes, static_cast<int>(train.images.dims[1]) == 3 ? 3 : 0);
  if (held.images.dims[1] != train.images.dims[1]) {
    train = data::ReadImageFolder(root + "/train", {}, 3);
  }
  const int64_t classes = static_cast<int64_t>(train.classes.size());
  out->class_names = train.classes;
  out->classes = classes;
  out->train = data::ArrayDataset(root + "/train", std::move(train.images),
                                  std::move(train.targets), classes);
  out->test = data::ArrayDataset(test, std::move(held.images),
                                 std::move(held.targets), classes);
}

// The first `limit` samples (0: all).
data::DatasetPtr Truncate(data::DatasetPtr d, int64_t limit) {
  if (limit <= 0 || limit >= d->size()) return d;
  std::vector<int64_t> first(limit);
  std::iota(first.begin(), first.end(), 0);
  return data::Subset(std::move(d), std::move(first));
}

// Fashion-MNIST's format (MNIST's files are named the same): uncompressed
// files are read in place, the gzip ones whole.
std::pair<data::DatasetPtr, data::DatasetPtr> IdxImages(
    const std::string& dir) {
  const char* prefixes[] = {"train", "t10k"};
  bool plain = true;
  for (const char* prefix : prefixes) {
    for (const char* kind : {"-images-idx3-ubyte", "-labels-idx1-ubyte"}) {
      struct stat st;
      const std::string path = dir + "/" + prefix + kind;
      plain = plain && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    }
  }
  if (!plain) {
    auto train = std::make_shared<data::Split>(
        data::LoadFashionMnistSplit(dir, "train"));
    auto test =
        std::make_shared<data::Split>(data::LoadFashionMnistSplit(dir, "test"));
    return {data::SplitDataset(std::move(train)),
            data::SplitDataset(std::move(test))};
  }
  data::DatasetPtr out[2];
  for (int s = 0; s < 2; ++s) {
    const std::string images = dir + "/" + prefixes[s] + "-images-idx3-ubyte";
    const std::string labels = dir + "/" + prefixes[s] + "-labels-idx1-ubyte";
    data::FileLayout layout;
    const data::Array header = data::ReadIdxLayout(images, &layout);
    const data::Array ids = data::ReadIdx(labels);
    if (header.type != data::ElementType::kUint8 || header.dims.size() != 3 ||
        ids.type != data::ElementType::kUint8 || ids.dims.size() != 1) {
      throw data::DataError(images + ", " + labels +
                            ": images uint8 [n, "
                            "height, width] and labels uint8 [n] expected, "
                            "not " +
                            header.Describe() + " and " + ids.Describe());
    }
    out[s] = data::FileInputsDataset(
        images, header, layout, {1, header.dims[1], header.dims[2]},
        data::ClassIdsAsInt32(ids), data::kNumClasses);
  }
  return {out[0], out[1]};
}

data::DatasetPtr CifarDataset(const std::string& dir, data::CifarKind kind,
                              const std::string& split) {
  data::CifarImages c = data::LoadCifarSplit(dir, kind, split);
  data::Array labels;
  labels.type = data::ElementType::kInt32;
  labels.dims = {static_cast<int64_t>(c.labels.size())};
  labels.bytes.resize(c.labels.size() * sizeof(int32_t));
  if (!c.labels.empty()) {
    std::memcpy(labels.bytes.data(), c.labels.data(), labels.bytes.size());
  }
  return data::ArrayDataset(dir + " (" + split + ")", std::move(c.images),
                            std::move(labels), c.classes);
}

}  // namespace

const std::vector<std::string>& DatasetNames() {
  static const std::vector<std::string> names = {
      "fashion_mnist", "mnist",       "cifar10",     "cifar100",
      "npy",           "safetensors", "image_folder"};
  return names;
}

TrainerData LoadTrainerData(const TrainerFlags& flags) {
  TrainerData out;
  out.name = flags.dataset;
  const std::string& name = flags.dataset;
  if (flags.input_layout != "nchw" && name != "npy" && name != "safetensors") {
    throw std::invalid_argument("--input_layout=" + flags.input_layout +
                                " is for --dataset=npy and safetensors; " +
                                name + " has a layout of its own");
  }
  if (name == "fashion_mnist" || name == "mnist") {
    const std::string dir = name == "fashion_mnist"
                                ? data::ResolveFashionMnistDir(flags.data_dir)
                                : ResolveUserPath(flags.data_dir);
    if (dir.empty()) {
      throw std::invalid_argument(
          "--dataset=mnist needs --data_dir: the folder of MNIST's four "
          "IDX files (train-images-idx3-ubyte.gz, ...)");
    }
    if (name == "mnist") {
      // Fashion-MNIST's reader would name its own package as the fix.
      for (const char* file :
           {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
            "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
        struct stat st;
        const std::string path = dir + "/" + file;
        if (::stat(path.c_str(), &st) != 0 &&
            ::stat((path + ".gz").c_str(), &st) != 0) {
          throw data::DataError(
              "--dataset=mnist: no " + path +
              "(.gz); give --data_dir the folder of MNIST's four IDX files "
              "(train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
              "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz; "
              "torchvision's MNIST/raw folder holds them)");
        }
      }
    }
    std::tie(out.train, out.test) = IdxImages(dir);
    out.classes = 10;
    if (name == "fashion_mnist") {
      out.class_names.assign(data::kClassNames.begin(),
                             data::kClassNames.end());
    }
    for (const char* prefix : {"train", "t10k"}) {
      for (const char* kind : {"-images-idx3-ubyte", "-labels-idx1-ubyte"}) {
        const std::string path = dir + "/" + prefix + kind;
        out.files.push_back(path);
        out.files.push_back(path + ".gz");
      }
    }
  } else if (name == "cifar10" || name == "cifar100") {
    if (flags.data_dir.empty()) {
      throw std::invalid_argument(
          "--dataset=" + name +
          " needs --data_dir: the folder of its "
          "binary version (" +
          (name == "cifar10" ? "cifar-10-batches-bin" : "cifar-100-binary") +
          ")");
    }
    const std::string dir = ResolveUserPath(flags.data_dir);
    const data::CifarKind kind =
        name == "cifar10" ? data::CifarKind::k10 : data::CifarKind::k100;
    // Plain batch files are read in place; compressed ones whole.
    bool plain = true;
    for (const char* split : {"train", "test"}) {
      for (const std::string& file : data::CifarFiles(dir, kind, split)) {
        plain = plain && data::IsPlainFile(file);
      }
    }
    for (const char* split : {"train", "test"}) {
      for (const std::string& file : data::CifarFiles(dir, kind, split)) {
        out.files.push_back(file);
      }
    }
    out.train = plain ? data::CifarFilesDataset(dir, kind, "train")
                      : CifarDataset(dir, kind, "train");
    out.test = plain ? data::CifarFilesDataset(dir, kind, "test")
                     : CifarDataset(dir, kind, "test");
    out.classes = name == "cifar10" ? 10 : 100;
    if (name == "cifar10") {
      out.class_names = {"airplane", "automobile", "bird",  "cat",  "deer",
                         "dog",      "frog",       "horse", "ship", "truck"};
    }
  } else if (name == "npy") {
    if (flags.data_dir.empty()) {
      throw std::invalid_argument(
          "--dataset=npy needs --data_dir: a folder holding train_inputs.npy, "
          "train_targets.npy, test_inputs.npy and test_targets.npy, or an "
          ".npz file holding those arrays");
    }
    const std::string dir = ResolveUserPath(flags.data_dir);
    TakeArraySplits(dir, data::ArrayFormat::kNpy, flags, &out);
    // An .npz file, or a folder: its four arrays.
    for (const char* split : {"train", "test"}) {
      for (const char* what : {"_inputs.npy", "_targets.npy"}) {
        out.files.push_back(dir + "/" + split + what);
      }
    }
  } else if (name == "safetensors") {
    if (flags.data_dir.empty()) {
      throw std::invalid_argument(
          "--dataset=safetensors needs --data_dir: a .safetensors file "
          "holding train_inputs, train_targets, test_inputs and test_targets");
    }
    TakeArraySplits(ResolveUserPath(flags.data_dir),
                    data::ArrayFormat::kSafetensors, flags, &out);
  } else if (name == "image_folder") {
    TakeImageFolders(flags, &out);
  } else {
    throw std::invalid_argument("--dataset: unknown data set '" + name + "'");
  }
  if (!(out.train->input() == out.test->input())) {
    throw data::DataError("--dataset=" + name + ": training inputs are " +
                          out.train->input().Describe() + ", test inputs " +
                          out.test->input().Describe());
  }
  // Nothing to learn from, or nothing to score: a result of "loss 0.000"
  // or "test acc 0.00" would look like one.
  for (const auto& [split, d] :
       {std::pair{"training", out.train}, std::pair{"test", out.test}}) {
    if (d->size() == 0) {
      throw data::DataError("--dataset=" + name + ": the " + split +
                            " set holds no samples (" + d->input().Describe() +
                            "); give it at least one");
    }
  }
  if (flags.crop_padding >= 0) {
    const std::vector<int64_t>& s = out.train->input().shape;
    if (flags.augment.find("crop") == std::string::npos) {
      throw std::invalid_argument("--crop_padding is for --augment=crop");
    }
    if (s.size() == 3 && flags.crop_padding >= std::min(s[1], s[2])) {
      throw std::invalid_argument(
          "--crop_padding=" + std::to_string(flags.crop_padding) +
          " leaves some windows of the " + std::to_string(s[1]) + "x" +
          std::to_string(s[2]) + " images with no image at all; give at most " +
          std::to_string(std::min(s[1], s[2]) - 1) + " (left out: " +
          std::to_string(data::CropPaddingOf(s)) + ", an eighth of the side)");
    }
  }
  out.train = Truncate(out.train, flags.limit);
  out.test = Truncate(out.test, flags.test_limit);
  if (flags.validation > 0) {
    const int64_t n = out.train->size();
    auto [kept, held] = data::HoldOut(out.train, flags.validation,
                                      flags.seed ^ 0x76616c6964ull);  // "valid"
    if (held->size() == 0 || kept->size() == 0) {
      throw std::invalid_argument(
          "--validation=" + FormatNumber(flags.validation) + " of " +
          std::to_string(n) + " training samples leaves " +
          (held->size() == 0 ? "none held out" : "none to train on") +
          "; use a larger share, a smaller one or a larger --limit");
    }
    out.train = std::move(kept);
    out.validation = std::move(held);
  }
  return out;
}

data::DatasetPtr LoadPredictInputs(const TrainerFlags& flags,
                                   const data::SampleSpec& trained_on,
                                   std::vector<std::string>* names) {
  const std::string path = ResolveUserPath(flags.predict);
  const std::string what = "--predict " + path;
  data::Array inputs;
  struct stat st;
  const bool folder = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (folder || data::IsImageFileName(path)) {
    const bool rgb = trained_on.shape.size() == 3 && trained_on.shape[0] == 3;
    data::ImageFolder images = data::ReadImages(path, rgb ? 3 : 0);
    if (names != nullptr) *names = images.paths;
    inputs = std::move(images.images);
  } else if (EndsWith(path, ".safetensors")) {
    std::map<std::string, data::Array> arrays =
        data::ArraysByName(data::ReadSafetensors(path));
    if (arrays.count("inputs") != 0) {
      inputs = std::move(arrays.at("inputs"));
    } else if (arrays.size() == 1) {
      inputs = std::move(arrays.begin()->second);
    } else {
      throw data::DataError(what + " holds " + std::to_string(arrays.size()) +
                            " tensors and none named 'inputs'; name the "
                            "samples to predict 'inputs'");
    }
  } else if (EndsWith(path, ".npy") || EndsWith(path, ".npy.gz")) {
    inputs = data::ReadNpy(path);
  } else {
    throw data::DataError(what +
                          ": give a .npy or .safetensors file of inputs "
                          "[n, ...] (numpy.save, safetensors.numpy.save_file), "
                          "a PNG or JPEG image, or a folder of them");
  }
  if (inputs.dims.empty() || inputs.dims[0] < 1) {
    throw data::DataError(what + " holds " + inputs.Describe() +
                          "; expected samples [n, ...] with n >= 1");
  }
  const int64_t n = inputs.dims[0];
  data::Array none;  // Targets the loader carries and nothing reads.
  none.type = data::ElementType::kInt32;
  none.dims = {n};
  none.bytes.assign(static_cast<size_t>(n) * sizeof(int32_t), 0);
  data::DatasetPtr d =
      AsImages(data::ArrayDataset(what, std::move(inputs), std::move(none)),
               flags, what);
  if (!(d->input() == trained_on)) {
    throw data::DataError(what + " holds " + d->input().Describe() +
                          " samples; the model was trained on " +
                          trained_on.Describe() +
                          ": save them as the training inputs were (type "
                          "and shape; uint8 pixels stay uint8)");
  }
  return d;
}

void RequireImages(const TrainerData& data, const std::string& program,
                   const std::vector<int64_t>& shape, int64_t classes) {
  const data::SampleSpec& in = data.train->input();
  const bool images = in.shape.size() == 3;
  if ((!shape.empty() && in.shape != shape) || !images ||
      (classes > 0 && data.classes != classes)) {
    throw std::invalid_argument(
        program + " takes images of " +
        (shape.empty() ? std::string("{channels, height, width}")
                       : data::DimsString(shape)) +
        (classes > 0 ? " in " + std::to_string(classes) + " classes" : "") +
        "; --dataset=" + data.name + " holds " + in.Describe() + " in " +
        std::to_string(data.classes) + " classes" +
        (images ? "; resnet_dp takes any image size and classes" : ""));
  }
}

}  // namespace ringlet::trainers
