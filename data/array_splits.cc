#include "data/array_splits.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "data/byte_source.h"
#include "data/data_error.h"
#include "data/file_dataset.h"
#include "data/npy_file.h"
#include "data/npz_file.h"
#include "data/safetensors.h"

namespace ringlet::data {
namespace {

// Class ids: the largest id in either split, plus one.
int64_t ClassesOf(const Array& a, const Array& b, const std::string& dir) {
  int64_t most = -1;
  for (const Array* t : {&a, &b}) {
    if (t->dims.size() != 1) {
      throw DataError(dir + ": targets " + t->Describe() +
                      " are not one class id a sample ([n]); the "
                      "trainers train classifiers");
    }
    for (int64_t i = 0; i < t->dims[0]; ++i) {
      int64_t v = 0;
      try {
        v = IntegerAt(t->bytes.data(), t->type, i);
      } catch (const std::invalid_argument&) {
        throw DataError(dir + ": targets " + t->Describe() +
                        " are not class ids (integers)");
      }
      if (v < 0) {
        throw DataError(dir + ": target " + std::to_string(i) + " is negative");
      }
      most = std::max(most, v);
    }
  }
  // A classifier's last layer has a row per class.
  constexpr int64_t kMostClasses = 1 << 20;
  if (most >= kMostClasses) {
    throw DataError(dir + ": a target is " + std::to_string(most) + ", past " +
                    std::to_string(kMostClasses) +
                    " classes; targets must be class ids 0..classes-1");
  }
  return most + 1;
}

}  // namespace

Array ClassIdsAsInt32(const Array& t) {
  if (t.type == ElementType::kInt32) return t;
  Array out;
  out.type = ElementType::kInt32;
  out.dims = t.dims;
  out.bytes.resize(t.dims[0] * sizeof(int32_t));
  for (int64_t i = 0; i < t.dims[0]; ++i) {
    const int32_t v =
        static_cast<int32_t>(IntegerAt(t.bytes.data(), t.type, i));
    std::memcpy(out.bytes.data() + 4 * i, &v, 4);
  }
  return out;
}

bool IsPlainFile(const std::string& path) {
  return OpenBytes(path)->remaining() >= 0;
}

ArraySplits ReadArraySplits(const std::string& dir, ArrayFormat format) {
  const bool safetensors = format == ArrayFormat::kSafetensors;
  const char* splits[] = {"train", "test"};
  Array x[2], y[2];
  FileLayout layout[2];
  bool in_place[2] = {false, false};
  std::string inputs[2];
  struct stat st;
  if (safetensors || (::stat(dir.c_str(), &st) == 0 && S_ISREG(st.st_mode))) {
    std::map<std::string, Array> arrays =
        safetensors ? ArraysByName(ReadSafetensors(dir)) : ReadNpz(dir);
    for (int s = 0; s < 2; ++s) {
      for (const auto& [what, into] :
           {std::pair{"_inputs", &x[s]}, std::pair{"_targets", &y[s]}}) {
        const std::string name = std::string(splits[s]) + what;
        auto it = arrays.find(name);
        if (it == arrays.end()) {
          throw DataError(dir + ": no array " + name +
                          " (it needs train_inputs, train_targets, "
                          "test_inputs and test_targets)");
        }
        *into = std::move(it->second);
      }
    }
  } else {
    for (int s = 0; s < 2; ++s) {
      inputs[s] = dir + "/" + splits[s] + "_inputs.npy";
      y[s] = ReadNpy(dir + "/" + splits[s] + "_targets.npy");
      in_place[s] = IsPlainFile(inputs[s]);
      x[s] = in_place[s] ? ReadNpyLayout(inputs[s], &layout[s])
                         : ReadNpy(inputs[s]);
    }
  }
  for (int s = 0; s < 2; ++s) {
    if (x[s].dims.empty()) {
      throw DataError(
          (inputs[s].empty() ? dir + ": " + splits[s] + "_inputs" : inputs[s]) +
          " holds a 0-d array (" + x[s].Describe() +
          "), not samples; save an array [n, ...] of n samples, e.g. "
          "x[None] for one");
    }
  }
  ArraySplits out;
  out.classes = ClassesOf(y[0], y[1], dir);
  DatasetPtr* into[2] = {&out.train, &out.test};
  for (int s = 0; s < 2; ++s) {
    *into[s] =
        in_place[s]
            ? FileInputsDataset(inputs[s], x[s], layout[s],
                                {x[s].dims.begin() + 1, x[s].dims.end()},
                                ClassIdsAsInt32(y[s]), out.classes)
            : ArrayDataset(dir + "/" + splits[s] + "_*.npy", std::move(x[s]),
                           ClassIdsAsInt32(y[s]), out.classes);
  }
  return out;
}

}  // namespace ringlet::data
