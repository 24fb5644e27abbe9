// A reader for NumPy's .npz archives (np.savez, np.savez_compressed): a zip
// file of .npy members, stored or deflated, ZIP64 included.
#ifndef RINGLET_DATA_NPZ_FILE_H_
#define RINGLET_DATA_NPZ_FILE_H_

#include <cstdint>
#include <map>
#include <string>

#include "data/array.h"

namespace ringlet::data {

inline constexpr uint64_t kDefaultNpzMaxBytes = uint64_t{16} << 30;

// Every array of the archive at `path`, by name ("x" for the member
// "x.npy"). Offsets and sizes are checked against the file, each member's
// CRC-32 against its bytes, and the total against `max_bytes`, before or
// while reading; encrypted members, other compressions and members not
// ending in .npy are refused. Throws DataError naming the file, the member
// and the fault.
std::map<std::string, Array> ReadNpz(const std::string& path,
                                     uint64_t max_bytes = kDefaultNpzMaxBytes);

// The bytes of an .npz archive (stored members, no ZIP64) holding `arrays`:
// what tests and tools write.
std::string NpzBytes(const std::map<std::string, Array>& arrays);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_NPZ_FILE_H_
