// Readers for IDX files (the MNIST family's format: MNIST, Fashion-MNIST,
// KMNIST, EMNIST), plain or gzip-compressed.
//
// IDX layout: two zero bytes, a type byte (0x08 uint8, 0x09 int8, 0x0B
// int16, 0x0C int32, 0x0D float32, 0x0E float64), the number of
// dimensions, each dimension as a big-endian uint32, then the data in
// row-major order, big-endian.
#ifndef RINGLET_DATA_IDX_FILE_H_
#define RINGLET_DATA_IDX_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "data/array.h"

namespace ringlet::data {

// Files larger than this are refused before any allocation: Fashion-MNIST's
// largest file is 47 MB, and a corrupt header must not ask for gigabytes.
inline constexpr uint64_t kDefaultIdxMaxBytes = uint64_t{1} << 30;

// Reads an IDX file of any type and rank (at least 1), plain or
// gzip-compressed, into this machine's byte order. Every dimension but the
// first must be non-zero, and the file must hold exactly the bytes its
// header promises (checked against a plain file's size before allocating;
// a compressed file is read up to the promise plus 1 MiB). Throws
// DataError naming the file and the fault.
Array ReadIdx(const std::string& path,
              uint64_t max_bytes = kDefaultIdxMaxBytes);

// As ReadIdx, the header alone (checked against the file's size): the
// array's type and dims without its bytes, and where they lie in the file,
// for reading samples in place. Throws DataError for a compressed file.
Array ReadIdxLayout(const std::string& path, FileLayout* layout,
                    uint64_t max_bytes = kDefaultIdxMaxBytes << 6);

struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;  // The product of dims, in row-major order.
};

// As ReadIdx, for a gzip-compressed file of unsigned bytes with
// `expected_rank` dimensions (Fashion-MNIST's files).
IdxArray ReadIdxGz(const std::string& path, int expected_rank,
                   uint64_t max_bytes = kDefaultIdxMaxBytes);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_IDX_FILE_H_
