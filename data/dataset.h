// A data set: samples, each an input and a target, every input of one
// shape and element type and every target of one of its own (an image of
// uint8 {3, 32, 32} with an int32 class id {}; a vector of float32 {8} with
// a float32 value {1}; token ids with token ids). As PyTorch's map-style
// Dataset, flashlight's fl::Dataset.
//
// Data sets compose without copying: Subset, Concat and HoldOut view the
// samples of others, which they keep alive.
#ifndef RINGLET_DATA_DATASET_H_
#define RINGLET_DATA_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/array.h"

namespace ringlet::data {

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual const SampleSpec& input() const = 0;
  virtual const SampleSpec& target() const = 0;
  // Targets are class ids in [0, classes()) when above 0.
  virtual int64_t classes() const { return 0; }
  // Copies sample i's input (input().bytes() bytes) and target
  // (target().bytes()) in this machine's byte order. i must lie in
  // [0, size()): checked by callers (the loader), not here.
  virtual void Read(int64_t i, void* input, void* target) const = 0;
};

using DatasetPtr = std::shared_ptr<const Dataset>;

// Samples of two arrays in memory, their first dimensions the sample
// count: inputs [n, input shape...], targets [n, target shape...]. With
// classes > 0 the targets must be integers in [0, classes), checked here.
// Throws DataError naming `name` and the fault.
DatasetPtr ArrayDataset(const std::string& name, Array inputs, Array targets,
                        int64_t classes = 0);

// Throws DataError, naming `name`, unless classes <= 0 or every element of
// `samples` targets is an integer in [0, classes).
void CheckClassIds(const std::string& name, const void* targets,
                   const SampleSpec& target, int64_t samples, int64_t classes);

// Throws DataError, naming `name`, the sample (`first` + its place in
// `values`), the element, the value and how to drop such samples, unless
// every element of the `samples` samples of `spec` at `values` is finite
// (integer types always are). `what`: "input", "target". A NaN or an
// infinity in the data would otherwise be scored like any value, or read
// as a diverging learning rate.
void CheckFinite(const std::string& name, const void* values,
                 const SampleSpec& spec, int64_t first, int64_t samples,
                 const char* what);

// `samples` samples in buffers the caller owns and keeps alive while the
// data set lives: inputs one after another, each `input`, and targets so,
// each `target`; nothing copied. With classes > 0, as ArrayDataset.
DatasetPtr BufferDataset(const std::string& name, int64_t samples,
                         const void* inputs, SampleSpec input,
                         const void* targets, SampleSpec target,
                         int64_t classes = 0);

// The samples `indices` of `base`, in that order (each in range; checked).
DatasetPtr Subset(DatasetPtr base, std::vector<int64_t> indices);

// The samples of each part in turn; every part's specs and classes must
// match the first's.
DatasetPtr Concat(std::vector<DatasetPtr> parts);

// `base` with each input seen as `shape`, the same elements in the same
// order (numpy's x[:, None]: {28, 28} as {1, 28, 28}). Throws DataError
// unless `shape` holds as many elements.
DatasetPtr WithInputShape(DatasetPtr base, std::vector<int64_t> shape);

// `base`'s inputs {H, W, C} (channels last: PIL's and np.asarray(image)'s
// layout) read as {C, H, W}, what convolutions take. Throws DataError for
// inputs of another rank.
DatasetPtr ChannelsFirst(DatasetPtr base);

// Splits `base` into (kept, held out) with round(fraction * size) samples
// held out, chosen by `seed` alone, each part in the base's order.
std::pair<DatasetPtr, DatasetPtr> HoldOut(DatasetPtr base, double fraction,
                                          uint64_t seed);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_DATASET_H_
