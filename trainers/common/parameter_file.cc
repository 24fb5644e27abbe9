#include "trainers/common/parameter_file.h"

#include "trainers/common/output_files.h"

namespace ringlet::trainers {
namespace {

constexpr char kSuffix[] = ".momentum";

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace

bool IsOptimizerState(const std::string& name) {
  const size_t n = sizeof(kSuffix) - 1;
  return name.size() > n && name.compare(name.size() - n, n, kSuffix) == 0;
}

void WriteParameterFile(const std::string& path, const std::string& model,
                        const nn::NamedTensors& state) {
  Checkpoint file;
  file.settings.push_back({"model", model, true});
  for (size_t i = 0; i < state.tensors.size(); ++i) {
    if (IsOptimizerState(state.names[i])) continue;
    const nn::Tensor& t = *state.tensors[i];
    file.tensors.push_back(
        {state.names[i], t.shape(), {t.data(), t.data() + t.numel()}});
  }
  WriteFileAtomically(path, EncodeCheckpoint(file), "--params_out");
}

void LoadParameterFile(ParallelTrainer& trainer, const std::string& path,
                       const std::string& model) {
  const Checkpoint file =
      ReadCheckpoint(path, "--params_in",
                     "give a file written by --params_out, or a checkpoint");
  for (const Setting& s : file.settings) {
    if (s.name == "model" && s.value != model) {
      throw CheckpointError("--params_in: " + path + " holds a " + s.value +
                            ", this program trains a " + model);
    }
  }
  const nn::NamedTensors state = trainer.State();
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
    values.push_back(found->values.data());
  }
  trainer.LoadState(values);
}

}  // namespace ringlet::trainers
