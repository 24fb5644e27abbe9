// The safetensors format (huggingface/safetensors), which PyTorch, JAX and
// numpy read and write: a little-endian uint64 header length, a JSON header
// naming each tensor's dtype, shape and [begin, end) byte range in the data
// that follows (plus "__metadata__", a string map), then the data, every
// byte of it belonging to exactly one tensor. Tensors of U8, I8, I16, I32,
// I64, F32 and F64 (data's element types) are read and written; others
// are refused, named.
#ifndef RINGLET_DATA_SAFETENSORS_H_
#define RINGLET_DATA_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "data/array.h"
#include "data/npy_file.h"

namespace ringlet::data {

struct SafetensorsFile {
  // Laid out in this order when encoded; in name order when decoded.
  std::vector<std::pair<std::string, Array>> tensors;
  std::map<std::string, std::string> metadata;
};

// The file's bytes, the header padded with spaces to a multiple of 8 bytes
// (as the reference writer does). Throws std::invalid_argument for a name
// given twice, "__metadata__" as a name, or an array whose bytes do not
// match its shape.
std::string EncodeSafetensors(const SafetensorsFile& file);

// Throws DataError "<path> is not a valid safetensors file (...)" for a
// header past the end or not JSON, an offset outside the data, overlapping
// or missing bytes, a shape that does not fit its bytes, or a dtype
// outside data's types.
SafetensorsFile DecodeSafetensors(const std::string& bytes,
                                  const std::string& path);

// The file at `path` (gzip-compressed too), at most `max_bytes` of it,
// checked against free memory before it is read. Throws DataError naming
// the file.
SafetensorsFile ReadSafetensors(const std::string& path,
                                uint64_t max_bytes = kDefaultNpyMaxBytes);

// Writes EncodeSafetensors(file) whole to "<path>.partial", then renames
// it over `path`, so a reader never sees half a file. Throws
// std::runtime_error naming the path when it cannot.
void WriteSafetensors(const std::string& path, const SafetensorsFile& file);

// The tensors by name (each name once).
std::map<std::string, Array> ArraysByName(SafetensorsFile file);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_SAFETENSORS_H_
