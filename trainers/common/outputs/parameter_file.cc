#include "trainers/common/outputs/parameter_file.h"

#include <fstream>
#include <sstream>

#include "nn/optim/optimizer.h"
#include "trainers/common/outputs/output_files.h"
#include "trainers/common/outputs/safetensors.h"

namespace ringlet::trainers {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return out + "]";
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The name the book's PyTorch model gives a state tensor of ringlet's
// `model`, and whether its values are transposed there. ResNet-18 (d2l's
// nn.Module): batch norm's gamma and beta are weight and bias, and
// nn.Linear keeps its weight [out, in] where ringlet keeps [in, out]. LeNet
// (the scratch chapter's tensors W1 .. b4): ringlet's names and layout.
struct TorchName {
  std::string name;
  bool transposed = false;
};

TorchName TorchNameOf(const std::string& model, const std::string& name,
                      const std::vector<int64_t>& shape) {
  if (model != "resnet18") return {name};
  if (EndsWith(name, ".gamma")) {
    return {name.substr(0, name.size() - 6) + ".weight"};
  }
  if (EndsWith(name, ".beta")) {
    return {name.substr(0, name.size() - 5) + ".bias"};
  }
  return {name, EndsWith(name, ".weight") && shape.size() == 2};
}

// [rows, cols] values as [cols, rows].
std::vector<float> Transposed(const float* values,
                              const std::vector<int64_t>& shape) {
  const int64_t rows = shape[0], cols = shape[1];
  std::vector<float> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = values[r * cols + c];
  }
  return out;
}

bool IsSafetensors(const std::string& path) {
  return EndsWith(path, ".safetensors");
}

namespace {

// What a file that is no parameter file looks like, by its first bytes:
// " (it is a NumPy .npy file)", or "".
std::string LooksLike(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  in.read(head, sizeof(head));
  const std::string start(head, static_cast<size_t>(in.gcount()));
  if (start.rfind("\x93NUMPY", 0) == 0) return " (it is a NumPy .npy file)";
  if (start.rfind("PK", 0) == 0) return " (it is a zip archive, an .npz?)";
  if (start.rfind("\x1f\x8b", 0) == 0) return " (it is gzip-compressed)";
  return "";
}

}  // namespace

void WriteSafetensorsFile(const std::string& path, const std::string& model,
                          const parallel::NamedTensors& state) {
  Safetensors file;
  file.metadata = {{"format", "pt"}, {"model", model}, {"writer", "ringlet"}};
  for (size_t i = 0; i < state.tensors.size(); ++i) {
    const std::string& name = state.names[i];
    if (IsOptimizerState(name)) continue;
    const nn::Tensor& t = *state.tensors[i];
    const TorchName torch = TorchNameOf(model, name, t.shape());
    if (torch.transposed) {
      file.f32.push_back({torch.name,
                          {t.shape()[1], t.shape()[0]},
                          Transposed(t.data(), t.shape())});
    } else {
      file.f32.push_back(
          {torch.name, t.shape(), {t.data(), t.data() + t.numel()}});
    }
    // PyTorch's batch norm also keeps a count of batches (used only with
    // momentum=None, cumulative averages; ringlet does not count them).
    if (model == "resnet18" && EndsWith(name, ".running_mean")) {
      file.i64_shapes.push_back(
          {name.substr(0, name.size() - 13) + ".num_batches_tracked", {}});
      file.i64_values.push_back({0});
    }
  }
  WriteOutputFile(path, EncodeSafetensors(file), "--params_out");
}

// The safetensors file at `path` as ringlet's tensors of `model`: the
// book's names mapped back (TorchNameOf), transposed values transposed
// back. Tensors ringlet does not hold (num_batches_tracked) are left out.
std::vector<CheckpointTensor> ReadSafetensorsFile(
    const std::string& path, const std::string& model,
    const parallel::NamedTensors& state) {
  const Safetensors file = DecodeSafetensors(
      ReadWholeFile(path, "--params_in", "give a file written by --params_out"),
      path);
  auto it = file.metadata.find("model");
  if (it != file.metadata.end() && it->second != model) {
    throw CheckpointError("--params_in: " + path + " holds a " + it->second +
                          ", this program trains a " + model);
  }
  std::vector<CheckpointTensor> out;
  for (size_t i = 0; i < state.tensors.size(); ++i) {
    const std::string& name = state.names[i];
    if (IsOptimizerState(name)) continue;
    const std::vector<int64_t>& shape = state.tensors[i]->shape();
    const TorchName torch = TorchNameOf(model, name, shape);
    // A tensor of another type is there, not missing: say which.
    for (const auto& [other, other_shape] : file.i64_shapes) {
      if (other != torch.name) continue;
      throw CheckpointError("--params_in: " + path + ": tensor " + other +
                            " is int64 (I64), where this model holds float32 "
                            "(F32); save it as float32 (tensor.float())");
    }
    for (const CheckpointTensor& t : file.f32) {
      if (t.name != torch.name) continue;
      if (!torch.transposed) {
        out.push_back({name, t.shape, t.values});
      } else if (t.shape.size() == 2) {
        out.push_back({name,
                       {t.shape[1], t.shape[0]},
                       Transposed(t.values.data(), t.shape)});
      } else {
        out.push_back({name, t.shape, t.values});  // Refused by shape.
      }
    }
  }
  return out;
}

}  // namespace

bool IsOptimizerState(const std::string& name) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) ==
               0;
  };
  // nn::Optimizer::State's names.
  for (const std::string& optimizer : nn::OptimizerNames()) {
    if (name == optimizer + ".step") return true;
  }
  return ends_with(".momentum") || ends_with(".exp_avg") ||
         ends_with(".exp_avg_sq");
}

void WriteParameterFile(const std::string& path, const std::string& model,
                        const parallel::NamedTensors& state) {
  if (IsSafetensors(path)) {
    WriteSafetensorsFile(path, model, state);
    return;
  }
  Checkpoint file;
  file.settings.push_back({"model", model, true});
  for (size_t i = 0; i < state.tensors.size(); ++i) {
    if (IsOptimizerState(state.names[i])) continue;
    const nn::Tensor& t = *state.tensors[i];
    file.tensors.push_back(
        {state.names[i], t.shape(), {t.data(), t.data() + t.numel()}});
  }
  WriteOutputFile(path, EncodeCheckpoint(file), "--params_out");
}

void LoadParameterFile(parallel::ReplicaEngine& engine, const std::string& path,
                       const std::string& model) {
  const parallel::NamedTensors state = engine.State(0);
  Checkpoint file;
  if (IsSafetensors(path)) {
    file.tensors = ReadSafetensorsFile(path, model, state);
  } else {
    try {
      file = ReadCheckpoint(
          path, "--params_in",
          "give a file written by --params_out, or a checkpoint");
    } catch (const CheckpointError& e) {
      // Not a checkpoint at all: say what --params_in reads.
      if (std::string(e.what()).find("is not a ringlet checkpoint") ==
          std::string::npos) {
        throw;
      }
      throw CheckpointError(
          "--params_in: " + path +
          " is neither a .safetensors file nor a "
          "ringlet checkpoint" +
          LooksLike(path) +
          "; give a file written by --params_out (name it .safetensors for "
          "PyTorch's format) or a checkpoint");
    }
  }
  for (const Setting& s : file.settings) {
    if (s.name == "model" && s.value != model) {
      throw CheckpointError("--params_in: " + path + " holds a " + s.value +
                            ", this program trains a " + model);
    }
  }
  std::vector<const float*> values;
  std::vector<std::vector<float>> kept;  // Optimizer state, unchanged.
  kept.reserve(state.tensors.size());
  for (size_t i = 0; i < state.tensors.size(); ++i) {
    const nn::Tensor& mine = *state.tensors[i];
    if (IsOptimizerState(state.names[i])) {
      kept.emplace_back(mine.data(), mine.data() + mine.numel());
      values.push_back(kept.back().data());
      continue;
    }
    const CheckpointTensor* found = nullptr;
    for (const CheckpointTensor& t : file.tensors) {
      if (t.name == state.names[i]) found = &t;
    }
    if (found == nullptr) {
      throw CheckpointError("--params_in: " + path + " has no tensor " +
                            state.names[i] + "; it belongs to another model");
    }
    if (found->shape != mine.shape()) {
      throw CheckpointError("--params_in: " + path + ": " + found->name +
                            " has shape " + ShapeText(found->shape) +
                            ", this model's is " + ShapeText(mine.shape()));
    }
    CheckTensorValues(*found, "--params_in: " + path);
    values.push_back(found->values.data());
  }
  engine.LoadState(values);
}

}  // namespace ringlet::trainers
