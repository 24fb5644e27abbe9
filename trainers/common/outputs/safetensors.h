// Parameter files in the safetensors format (data/safetensors.h reads and
// writes the format): F32 tensors and I64 scalars (batch norm's
// num_batches_tracked), as a checkpoint holds them.
#ifndef RINGLET_TRAINERS_COMMON_OUTPUTS_SAFETENSORS_H_
#define RINGLET_TRAINERS_COMMON_OUTPUTS_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trainers/common/checkpoints/checkpoint.h"

namespace ringlet::trainers {

struct Safetensors {
  std::vector<CheckpointTensor> f32;  // In name order when read.
  std::vector<std::pair<std::string, std::vector<int64_t>>> i64_shapes;
  std::vector<std::vector<int64_t>> i64_values;  // Beside i64_shapes.
  std::map<std::string, std::string> metadata;
};

// The file's bytes; tensors laid out in the order given.
std::string EncodeSafetensors(const Safetensors& file);

// Throws CheckpointError naming `path` for anything that is not a valid
// safetensors file (data::DecodeSafetensors's checks) or that holds a
// dtype other than F32 and I64.
Safetensors DecodeSafetensors(const std::string& bytes,
                              const std::string& path);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_OUTPUTS_SAFETENSORS_H_
