// A reader for NumPy's .npy files (format versions 1, 2 and 3): one array
// in C order of uint8, int8, int16, int32, int64, float32 or float64,
// either byte order.
#ifndef RINGLET_DATA_NPY_FILE_H_
#define RINGLET_DATA_NPY_FILE_H_

#include <cstdint>
#include <string>

#include "data/array.h"
#include "data/byte_source.h"

namespace ringlet::data {

inline constexpr uint64_t kDefaultNpyMaxBytes = uint64_t{16} << 30;

// Reads the array at `path` (plain or gzip-compressed) into this machine's
// byte order. The header (at most 64 KiB) must name a supported type, C
// order and a shape, and the file must hold exactly the bytes the shape
// promises, checked before allocating. Fortran order, object arrays,
// structured types and other types are refused, naming what the file
// holds and what to save instead. Throws DataError naming the file.
Array ReadNpy(const std::string& path,
              uint64_t max_bytes = kDefaultNpyMaxBytes);

// The same from a source (an .npz archive's member, say).
Array ReadNpy(ByteSource& source, uint64_t max_bytes = kDefaultNpyMaxBytes);

// As ReadNpy, the header alone (checked against the file's size): the
// array's type and dims without its bytes, and where they lie in the file,
// for reading samples in place. Throws DataError for a compressed file.
Array ReadNpyLayout(const std::string& path, FileLayout* layout,
                    uint64_t max_bytes = uint64_t{1} << 40);

// The bytes of a .npy file (version 1) holding `array`: what tests and
// tools write.
std::string NpyBytes(const Array& array);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_NPY_FILE_H_
