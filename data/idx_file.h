// A strict reader for gzip-compressed IDX files (the MNIST file format).
//
// IDX layout: two zero bytes, a type byte (0x08 = unsigned byte), the number
// of dimensions, then each dimension as a big-endian uint32, then the data in
// row-major order. Only unsigned-byte data is supported, which is all that
// MNIST and Fashion-MNIST use.
#ifndef RINGLET_DATA_IDX_FILE_H_
#define RINGLET_DATA_IDX_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ringlet::data {

struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;  // The product of dims, in row-major order.
};

// Files larger than this are refused before any allocation: Fashion-MNIST's
// largest file is 47 MB, and a corrupt header must not ask for gigabytes.
inline constexpr uint64_t kDefaultIdxMaxBytes = uint64_t{1} << 30;

// Reads the whole file at `path` and checks that it has `expected_rank`
// dimensions, that every dimension is non-zero apart from the first, and that
// the data holds exactly as many bytes as the header promises. Throws
// DataError naming the file and the problem otherwise.
IdxArray ReadIdxGz(const std::string& path, int expected_rank,
                   uint64_t max_bytes = kDefaultIdxMaxBytes);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_IDX_FILE_H_
