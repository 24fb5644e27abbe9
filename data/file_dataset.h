// Data sets whose inputs stay in their files, read sample by sample with
// pread when the loader asks: a process holds only the samples it loads
// (its share, under mpirun), so its memory does not grow with the data
// set. Targets, small, are held in memory. Uncompressed files only (a
// compressed one cannot be read at a place).
#ifndef RINGLET_DATA_FILE_DATASET_H_
#define RINGLET_DATA_FILE_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "data/array.h"
#include "data/cifar.h"
#include "data/dataset.h"

namespace ringlet::data {

// Inputs in an IDX or .npy file (`path`, its header read by ReadIdxLayout
// or ReadNpyLayout: `header`'s dims, `layout`), each sample of
// `sample_shape` (the file's dims after the first, or the same elements
// reshaped: {1, 28, 28} for an IDX image of 28 x 28), with `targets` [n,
// ...] in memory. Throws DataError as ArrayDataset does, and when the
// shape does not hold the file's elements.
DatasetPtr FileInputsDataset(const std::string& path, const Array& header,
                             const FileLayout& layout,
                             std::vector<int64_t> sample_shape, Array targets,
                             int64_t classes = 0);

// CIFAR's binary batches of `split` in `dir` (LoadCifarSplit's files):
// labels read once, images read in place.
DatasetPtr CifarFilesDataset(const std::string& dir, CifarKind kind,
                             const std::string& split);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_FILE_DATASET_H_
