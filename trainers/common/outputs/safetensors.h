// The safetensors format (huggingface/safetensors), which PyTorch, JAX and
// others read: a little-endian uint64 header length, a JSON header naming
// each tensor's dtype, shape and [begin, end) byte range in the data that
// follows (plus "__metadata__", a string map), then the data, every byte
// of it belonging to exactly one tensor. ringlet writes F32 tensors and I64
// scalars (batch norm's num_batches_tracked) and reads F32 and I64.
#ifndef RINGLET_TRAINERS_COMMON_OUTPUTS_SAFETENSORS_H_
#define RINGLET_TRAINERS_COMMON_OUTPUTS_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/array.h"
#include "trainers/common/checkpoints/checkpoint.h"

namespace ringlet::trainers {

struct Safetensors {
  std::vector<CheckpointTensor> f32;  // In name order when read.
  std::vector<std::pair<std::string, std::vector<int64_t>>> i64_shapes;
  std::vector<std::vector<int64_t>> i64_values;  // Beside i64_shapes.
  std::map<std::string, std::string> metadata;
};

// The file's bytes; tensors laid out in the order given, the header padded
// with spaces to a multiple of 8 bytes (as the reference writer does).
std::string EncodeSafetensors(const Safetensors& file);

// Throws CheckpointError naming `path` for anything that is not a valid
// safetensors file (a header past the end or not JSON, an offset outside the
// data, overlapping or missing bytes, a shape that does not fit its bytes)
// or that holds a dtype other than F32 and I64.
Safetensors DecodeSafetensors(const std::string& bytes,
                              const std::string& path);

// The same checks, for data: every tensor as an array by name, of U8, I8,
// I16, I32, I64, F32 or F64 (others are refused, named).
std::map<std::string, data::Array> DecodeSafetensorsArrays(
    const std::string& bytes, const std::string& path);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_OUTPUTS_SAFETENSORS_H_
