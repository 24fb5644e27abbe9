// A model's state (parameters and buffers) as a safetensors file under
// PyTorch's state_dict names and layouts, so the matching torch.nn model
// loads it strictly:
//   model.load_state_dict(safetensors.torch.load_file(path))
// Per layer kind: linear's weight ([in, out] here) is written [out, in],
// as torch.nn.Linear holds it; batchnorm2d's gamma and beta are its weight
// and bias, beside running_mean, running_var and num_batches_tracked (an
// int64 0: ringlet keeps no count). Every other layer, one's own too,
// under its own names and shapes. The file format is data's
// (data/safetensors.h).
#ifndef RINGLET_NN_STATE_FILE_H_
#define RINGLET_NN_STATE_FILE_H_

#include <map>
#include <string>

#include "nn/layers/module.h"

namespace ringlet::nn {

// Writes the file whole to a temporary name beside `path`, then renames
// it over. Throws std::runtime_error naming the path when it cannot.
void SaveStateFile(Module& model, const std::string& path,
                   const std::map<std::string, std::string>& metadata = {});

// Loads such a file (or one PyTorch saved from the matching model's
// state_dict) into `model`, on whatever device it is. Strict, as
// load_state_dict: every tensor the model holds must be there with its
// shape, and nothing else but num_batches_tracked; throws
// std::invalid_argument naming the first difference, data::DataError for
// a file that is not valid safetensors.
void LoadStateFile(Module& model, const std::string& path);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_STATE_FILE_H_
