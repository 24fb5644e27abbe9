// A data set saved as four arrays, the way numpy users save one:
// train_inputs, train_targets, test_inputs and test_targets, the targets
// class ids of any integer type (numpy's int64 too). What the trainers'
// --dataset=npy and --dataset=safetensors read, for programs of one's own.
#ifndef RINGLET_DATA_ARRAY_SPLITS_H_
#define RINGLET_DATA_ARRAY_SPLITS_H_

#include <cstdint>
#include <string>

#include "data/array.h"
#include "data/dataset.h"

namespace ringlet::data {

enum class ArrayFormat {
  // A folder of train_inputs.npy, train_targets.npy, test_inputs.npy and
  // test_targets.npy, or one .npz archive holding those arrays (as
  // np.savez(f, train_inputs=x, ...) writes it).
  kNpy,
  // One .safetensors file holding the four (safetensors.numpy.save_file).
  kSafetensors,
};

struct ArraySplits {
  DatasetPtr train, test;
  int64_t classes = 0;  // The largest class id in either split, plus one.
};

// Inputs [n, ...] of any sample shape and numeric type; plain .npy inputs
// stay in their files (each process reads the samples it loads), the rest
// is read whole. Targets become int32 class ids, at most 2^20 classes.
// Throws DataError naming the file and what is wrong (a missing array,
// a 0-d array, targets that are not class ids, a damaged file).
ArraySplits ReadArraySplits(const std::string& path, ArrayFormat format);

// Class ids (integers of any type, already checked to lie in [0, 2^31)) as
// int32, what softmax cross-entropy reads.
Array ClassIdsAsInt32(const Array& targets);

// Whether `path` is uncompressed, so its samples can be read in place.
bool IsPlainFile(const std::string& path);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_ARRAY_SPLITS_H_
