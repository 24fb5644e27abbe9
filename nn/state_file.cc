#include "nn/state_file.h"

#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "data/safetensors.h"

namespace ringlet::nn {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One tensor of the model as the file holds it.
struct Entry {
  std::string name;  // PyTorch's.
  Tensor* value;     // The model's.
  bool transposed;   // [in, out] here, [out, in] in the file.
};

// A [rows, cols] matrix's values as [cols, rows].
std::vector<float> Transposed(const std::vector<float>& values, int64_t rows,
                              int64_t cols) {
  std::vector<float> out(values.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = values[r * cols + c];
  }
  return out;
}

std::string Prefix(const std::string& full, const std::string& local) {
  return full.substr(0, full.size() - local.size());
}

// Every parameter and buffer of `model`, named and laid out as PyTorch's
// state_dict, in the model's order; `counts` gets batch norm's
// num_batches_tracked names.
std::vector<Entry> EntriesOf(Module& model, std::vector<std::string>* counts) {
  // The layer kind that owns each tensor (leaf modules only).
  std::map<const Tensor*, std::string> kind_of;
  VisitModules(model, [&](Module& m) {
    if (!m.Children().empty()) return;
    std::vector<Parameter*> params;
    m.CollectParameters(m.path(), &params);
    for (Parameter* p : params) kind_of[&p->value] = m.kind();
  });
  std::vector<Entry> out;
  for (Parameter* p : model.Parameters()) {
    const std::string& kind = kind_of[&p->value];
    Entry e{p->name, &p->value, false};
    if (kind == "linear" && EndsWith(p->name, "weight")) {
      e.transposed = true;
    } else if (kind.rfind("batchnorm2d", 0) == 0) {
      if (EndsWith(p->name, "gamma")) {
        e.name = Prefix(p->name, "gamma") + "weight";
      } else if (EndsWith(p->name, "beta")) {
        e.name = Prefix(p->name, "beta") + "bias";
      }
    }
    out.push_back(e);
  }
  for (Buffer* b : model.Buffers()) {
    out.push_back({b->name, &b->value, false});
    if (EndsWith(b->name, "running_mean")) {
      counts->push_back(Prefix(b->name, "running_mean") +
                        "num_batches_tracked");
    }
  }
  return out;
}

}  // namespace

void SaveStateFile(Module& model, const std::string& path,
                   const std::map<std::string, std::string>& metadata) {
  std::vector<std::string> counts;
  data::SafetensorsFile file;
  file.metadata = metadata;
  for (const Entry& e : EntriesOf(model, &counts)) {
    const Shape& shape = e.value->shape();
    std::vector<float> values(e.value->numel());
    CopyToHost(*e.value, values.data());
    data::Array a;
    a.type = data::ElementType::kFloat32;
    a.dims.assign(shape.begin(), shape.end());
    if (e.transposed) {
      values = Transposed(values, shape[0], shape[1]);
      a.dims = {shape[1], shape[0]};
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
    a.bytes.assign(bytes, bytes + values.size() * sizeof(float));
    file.tensors.emplace_back(e.name, std::move(a));
  }
  for (const std::string& name : counts) {
    data::Array zero;
    zero.type = data::ElementType::kInt64;
    zero.bytes.assign(sizeof(int64_t), 0);
    file.tensors.emplace_back(name, std::move(zero));
  }
  data::WriteSafetensors(path, file);
}

void LoadStateFile(Module& model, const std::string& path) {
  std::map<std::string, data::Array> arrays =
      data::ArraysByName(data::ReadSafetensors(path));
  std::vector<std::string> counts;
  const std::vector<Entry> entries = EntriesOf(model, &counts);
  for (const std::string& name : counts) arrays.erase(name);
  // Checked whole before anything changes.
  for (const Entry& e : entries) {
    auto it = arrays.find(e.name);
    if (it == arrays.end()) {
      throw std::invalid_argument(path + ": no tensor " + e.name +
                                  " (the model holds it)");
    }
    Shape want = e.value->shape();
    if (e.transposed) want = {want[1], want[0]};
    const std::vector<int64_t> want_dims(want.begin(), want.end());
    if (it->second.type != data::ElementType::kFloat32 ||
        it->second.dims != want_dims) {
      throw std::invalid_argument(
          path + ": tensor " + e.name + " is " + it->second.Describe() +
          "; the model holds float32 " + ToString(want));
    }
  }
  // Every entry is there, so a name left over is one the model lacks.
  std::set<std::string> held;
  for (const Entry& e : entries) held.insert(e.name);
  for (const auto& [name, array] : arrays) {
    if (held.count(name) == 0) {
      throw std::invalid_argument(path + ": tensor " + name +
                                  " is not the model's");
    }
  }
  for (const Entry& e : entries) {
    const data::Array& a = arrays.at(e.name);
    std::vector<float> values(e.value->numel());
    std::memcpy(values.data(), a.bytes.data(), a.bytes.size());
    if (e.transposed) {
      values = Transposed(values, e.value->shape()[1], e.value->shape()[0]);
    }
    CopyFromHost(values.data(), *e.value);
  }
}

}  // namespace ringlet::nn
