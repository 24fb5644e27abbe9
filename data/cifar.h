// Readers for CIFAR-10 and CIFAR-100 in their binary version (Krizhevsky
// 2009): 32x32 colour images, each a record of its label byte(s) and 3072
// pixel bytes (1024 red, 1024 green, 1024 blue, row by row).
//
//   CIFAR-10:  data_batch_1.bin .. data_batch_5.bin (train), test_batch.bin;
//              records of 1 + 3072 bytes, labels 0..9.
//   CIFAR-100: train.bin, test.bin; records of 2 + 3072 bytes: the coarse
//              label (0..19), then the fine one (0..99), the one read.
#ifndef RINGLET_DATA_CIFAR_H_
#define RINGLET_DATA_CIFAR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "data/array.h"

namespace ringlet::data {

enum class CifarKind { k10, k100 };

inline constexpr int kCifarSide = 32;
inline constexpr int kCifarImageBytes = 3 * kCifarSide * kCifarSide;

struct CifarImages {
  Array images;                 // uint8 [n, 3, 32, 32]
  std::vector<int32_t> labels;  // n, each in [0, classes)
  int classes = 0;              // 10 or 100
};

// Reads one batch file (plain or gzip-compressed). Its size must be a
// whole number of records, at most `max_bytes`, and every label in range;
// else DataError naming the file, the record and the fault. With
// labels_only, the images are checked and not kept.
CifarImages ReadCifarBatch(const std::string& path, CifarKind kind,
                           uint64_t max_bytes = uint64_t{1} << 30,
                           bool labels_only = false);

// The files of `split` ("train" or "test") in `dir`, in order; a missing
// one's DataError says where to get them.
std::vector<std::string> CifarFiles(const std::string& dir, CifarKind kind,
                                    const std::string& split);

// `split` ("train" or "test") of the data set in `dir`, its files in
// order; a missing file's error says where to get them.
CifarImages LoadCifarSplit(const std::string& dir, CifarKind kind,
                           const std::string& split);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_CIFAR_H_
