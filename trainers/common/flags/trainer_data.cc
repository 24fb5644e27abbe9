#include "trainers/common/flags/trainer_data.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "data/batch_loader.h"
#include "data/byte_source.h"
#include "data/cifar.h"
#include "data/data_error.h"
#include "data/fashion_mnist.h"
#include "data/file_dataset.h"
#include "data/idx_file.h"
#include "data/npy_file.h"
#include "data/npz_file.h"
#include "trainers/common/outputs/metrics.h"
#include "trainers/common/outputs/output_files.h"
#include "trainers/common/outputs/safetensors.h"

namespace ringlet::trainers {
namespace {

// The first `limit` samples (0: all).
data::DatasetPtr Truncate(data::DatasetPtr d, int64_t limit) {
  if (limit <= 0 || limit >= d->size()) return d;
  std::vector<int64_t> first(limit);
  std::iota(first.begin(), first.end(), 0);
  return data::Subset(std::move(d), std::move(first));
}

// Class ids as int32, what softmax cross-entropy reads.
data::Array AsInt32(const data::Array& t);

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
    out[s] = data::FileInputsDataset(images, header, layout,
                                     {1, header.dims[1], header.dims[2]},
                                     AsInt32(ids), data::kNumClasses);
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

// Class ids: the largest id in either split, plus one.
int64_t ClassesOf(const data::Array& a, const data::Array& b,
                  const std::string& dir) {
  int64_t most = -1;
  for (const data::Array* t : {&a, &b}) {
    if (t->dims.size() != 1) {
      throw data::DataError(dir + ": targets " + t->Describe() +
                            " are not one class id a sample ([n]); the "
                            "trainers train classifiers");
    }
    for (int64_t i = 0; i < t->dims[0]; ++i) {
      int64_t v = 0;
      try {
        v = data::IntegerAt(t->bytes.data(), t->type, i);
      } catch (const std::invalid_argument&) {
        throw data::DataError(dir + ": targets " + t->Describe() +
                              " are not class ids (integers)");
      }
      if (v < 0) {
        throw data::DataError(dir + ": target " + std::to_string(i) +
                              " is negative");
      }
      most = std::max(most, v);
    }
  }
  // A classifier's last layer has a row per class.
  constexpr int64_t kMostClasses = 1 << 20;
  if (most >= kMostClasses) {
    throw data::DataError(dir + ": a target is " + std::to_string(most) +
                          ", past " + std::to_string(kMostClasses) +
                          " classes; targets must be class ids 0..classes-1");
  }
  return most + 1;
}

// Class ids (ClassesOf's: integers in [0, 2^20)) as int32, what softmax
// cross-entropy reads.
data::Array AsInt32(const data::Array& t) {
  if (t.type == data::ElementType::kInt32) return t;
  data::Array out;
  out.type = data::ElementType::kInt32;
  out.dims = t.dims;
  out.bytes.resize(t.dims[0] * sizeof(int32_t));
  for (int64_t i = 0; i < t.dims[0]; ++i) {
    const int32_t v =
        static_cast<int32_t>(data::IntegerAt(t.bytes.data(), t.type, i));
    std::memcpy(out.bytes.data() + 4 * i, &v, 4);
  }
  return out;
}

// An uncompressed file: one that can be read in place.
bool Plain(const std::string& path) {
  return data::OpenBytes(path)->remaining() >= 0;
}

// A folder of the four .npy files, or one .npz archive holding them (as
// np.savez(f, train_inputs=..., ...) writes it). Plain .npy inputs stay in
// their files, each process reading the samples it loads; compressed ones,
// and an archive's, are read whole.
std::pair<data::DatasetPtr, data::DatasetPtr> NpyFiles(const std::string& dir,
                                                       bool safetensors,
                                                       int64_t* classes) {
  const char* splits[] = {"train", "test"};
  data::Array x[2], y[2];
  data::FileLayout layout[2];
  bool in_place[2] = {false, false};
  std::string inputs[2];
  struct stat st;
  if (safetensors || (::stat(dir.c_str(), &st) == 0 && S_ISREG(st.st_mode))) {
    std::map<std::string, data::Array> arrays =
        safetensors
            ? DecodeSafetensorsArrays(
                  ReadWholeFile(dir, "--data_dir",
                                "; give the .safetensors file holding "
                                "train_inputs, train_targets, test_inputs "
                                "and test_targets"),
                  dir)
            : data::ReadNpz(dir);
    for (int s = 0; s < 2; ++s) {
      for (const auto& [what, into] :
           {std::pair{"_inputs", &x[s]}, std::pair{"_targets", &y[s]}}) {
        const std::string name = std::string(splits[s]) + what;
        auto it = arrays.find(name);
        if (it == arrays.end()) {
          throw data::DataError(dir + ": no array " + name +
                                " (it needs train_inputs, train_targets, "
                                "test_inputs and test_targets)");
        }
        *into = std::move(it->second);
      }
    }
  } else {
    for (int s = 0; s < 2; ++s) {
      inputs[s] = dir + "/" + splits[s] + "_inputs.npy";
      y[s] = data::ReadNpy(dir + "/" + splits[s] + "_targets.npy");
      in_place[s] = Plain(inputs[s]);
      x[s] = in_place[s] ? data::ReadNpyLayout(inputs[s], &layout[s])
                         : data::ReadNpy(inputs[s]);
    }
  }
  for (int s = 0; s < 2; ++s) {
    if (x[s].dims.empty()) {
      throw data::DataError(
          (inputs[s].empty() ? dir + ": " + splits[s] + "_inputs" : inputs[s]) +
          " holds a 0-d array (" + x[s].Describe() +
          "), not samples; save an array [n, ...] of n samples, e.g. "
          "x[None] for one");
    }
  }
  *classes = ClassesOf(y[0], y[1], dir);
  data::DatasetPtr out[2];
  for (int s = 0; s < 2; ++s) {
    out[s] =
        in_place[s]
            ? data::FileInputsDataset(inputs[s], x[s], layout[s],
                                      {x[s].dims.begin() + 1, x[s].dims.end()},
                                      AsInt32(y[s]), *classes)
            : data::ArrayDataset(dir + "/" + splits[s] + "_*.npy",
                                 std::move(x[s]), AsInt32(y[s]), *classes);
  }
  return {out[0], out[1]};
}

}  // namespace

const std::vector<std::string>& DatasetNames() {
  static const std::vector<std::string> names = {
      "fashion_mnist", "mnist", "cifar10", "cifar100", "npy", "safetensors"};
  return names;
}

TrainerData LoadTrainerData(const TrainerFlags& flags) {
  TrainerData out;
  out.name = flags.dataset;
  const std::string& name = flags.dataset;
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
        plain = plain && Plain(file);
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
  } else if (name == "npy") {
    if (flags.data_dir.empty()) {
      throw std::invalid_argument(
          "--dataset=npy needs --data_dir: a folder holding train_inputs.npy, "
          "train_targets.npy, test_inputs.npy and test_targets.npy, or an "
          ".npz file holding those arrays");
    }
    const std::string dir = ResolveUserPath(flags.data_dir);
    std::tie(out.train, out.test) = NpyFiles(dir, false, &out.classes);
    out.files = {dir};  // An .npz file, or a folder: its four arrays.
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
    const std::string dir = ResolveUserPath(flags.data_dir);
    std::tie(out.train, out.test) = NpyFiles(dir, true, &out.classes);
    out.files = {dir};
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
