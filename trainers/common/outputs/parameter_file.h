// --params_out and --params_in: a trained model's state in a file that
// describes itself. A path ending in .safetensors is the safetensors format
// (safetensors.h) under the names of the book's PyTorch model, so
// model.load_state_dict(safetensors.torch.load_file(path)) loads it (see
// TorchNameOf in parameter_file.cc); any other path is ringlet's own: The
// container is the checkpoint's (checkpoint.h: a JSON header with each tensor's
// name and shape, float32 values, a checksum), holding the model's parameters
// and batch-norm statistics without optimizer state or position, and recording
// the model's name. --params_in reads such a file or a whole checkpoint.
#ifndef RINGLET_TRAINERS_COMMON_OUTPUTS_PARAMETER_FILE_H_
#define RINGLET_TRAINERS_COMMON_OUTPUTS_PARAMETER_FILE_H_

#include <string>

#include "parallel/replica_checks.h"
#include "trainers/common/checkpoints/checkpoint.h"
#include "trainers/common/loop/training_loop.h"

namespace ringlet::trainers {

// True for a state tensor that belongs to the optimizer ("W1.momentum",
// "W1.exp_avg", "adamw.step": nn::Optimizer::State's names).
bool IsOptimizerState(const std::string& name);

// Writes `state`'s model tensors (IsOptimizerState ones left out) with the
// model's name, atomically. Throws std::runtime_error naming --params_out.
void WriteParameterFile(const std::string& path, const std::string& model,
                        const parallel::NamedTensors& state);

// Sets every model tensor of `engine`'s state (every local replica) from
// the file at `path`, matched by name and checked by shape; optimizer state
// keeps its values. Throws CheckpointError naming the file and what does not
// fit (another model, a missing tensor, another shape).
void LoadParameterFile(parallel::ReplicaEngine& engine, const std::string& path,
                       const std::string& model);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_OUTPUTS_PARAMETER_FILE_H_
