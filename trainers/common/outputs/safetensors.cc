#include "trainers/common/outputs/safetensors.h"

#include <cstring>
#include <stdexcept>

#include "data/data_error.h"
#include "data/safetensors.h"

namespace ringlet::trainers {

std::string EncodeSafetensors(const Safetensors& file) {
  data::SafetensorsFile out;
  out.metadata = file.metadata;
  for (const CheckpointTensor& t : file.f32) {
    data::Array a;
    a.type = data::ElementType::kFloat32;
    a.dims = t.shape;
    const auto* bytes = reinterpret_cast<const uint8_t*>(t.values.data());
    a.bytes.assign(bytes, bytes + t.values.size() * sizeof(float));
    out.tensors.emplace_back(t.name, std::move(a));
  }
  for (size_t i = 0; i < file.i64_shapes.size(); ++i) {
    data::Array a;
    a.type = data::ElementType::kInt64;
    a.dims = file.i64_shapes[i].second;
    const auto* bytes =
        reinterpret_cast<const uint8_t*>(file.i64_values[i].data());
    a.bytes.assign(bytes, bytes + file.i64_values[i].size() * sizeof(int64_t));
    out.tensors.emplace_back(file.i64_shapes[i].first, std::move(a));
  }
  try {
    return data::EncodeSafetensors(out);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(e.what());
  }
}

Safetensors DecodeSafetensors(const std::string& bytes,
                              const std::string& path) {
  data::SafetensorsFile decoded;
  try {
    decoded = data::DecodeSafetensors(bytes, path);
  } catch (const data::DataError& e) {
    throw CheckpointError(e.what());
  }
  Safetensors file;
  file.metadata = std::move(decoded.metadata);
  for (auto& [name, a] : decoded.tensors) {
    const int64_t n = a.elements();
    if (a.type == data::ElementType::kFloat32) {
      CheckpointTensor t{name, a.dims, std::vector<float>(n)};
      std::memcpy(t.values.data(), a.bytes.data(), a.bytes.size());
      file.f32.push_back(std::move(t));
    } else if (a.type == data::ElementType::kInt64) {
      std::vector<int64_t> values(n);
      std::memcpy(values.data(), a.bytes.data(), a.bytes.size());
      file.i64_shapes.emplace_back(name, a.dims);
      file.i64_values.push_back(std::move(values));
    } else {
      throw CheckpointError(
          path + ": tensor " + name + " is " + data::ToString(a.type) +
          "; parameter files hold float32 (F32) and int64 (I64)");
    }
  }
  return file;
}

}  // namespace ringlet::trainers
