#include "trainers/common/outputs/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "nlohmann/json.hpp"

namespace ringlet::trainers {
namespace {

// Integers only: nlohmann's get<int64_t>() of 1e300 would be an
// out-of-range float conversion.
std::vector<int64_t> IntegersOf(const nlohmann::json& list,
                                const std::string& what) {
  if (!list.is_array()) throw std::invalid_argument(what + " is not a list");
  for (const nlohmann::json& v : list) {
    if (!v.is_number_integer()) {
      throw std::invalid_argument(what + " holds " + v.dump() +
                                  ", not an integer");
    }
  }
  return list.get<std::vector<int64_t>>();
}

}  // namespace

std::string EncodeSafetensors(const Safetensors& file) {
  nlohmann::ordered_json header;
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  uint64_t at = 0;
  for (const CheckpointTensor& t : file.f32) {
    const uint64_t bytes = t.values.size() * sizeof(float);
    header[t.name] = {{"dtype", "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  for (size_t i = 0; i < file.i64_shapes.size(); ++i) {
    const uint64_t bytes = file.i64_values[i].size() * sizeof(int64_t);
    header[file.i64_shapes[i].first] = {{"dtype", "I64"},
                                        {"shape", file.i64_shapes[i].second},
                                        {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t length = text.size();
  std::memcpy(out.data(), &length, 8);  // Little-endian on x86-64.
  out += text;
  for (const CheckpointTensor& t : file.f32) {
    out.append(reinterpret_cast<const char*>(t.values.data()),
               t.values.size() * sizeof(float));
  }
  for (const std::vector<int64_t>& v : file.i64_values) {
    out.append(reinterpret_cast<const char*>(v.data()),
               v.size() * sizeof(int64_t));
  }
  return out;
}

namespace {

// Decodes and checks the file; every tensor into `arrays` when given (any
// of data's types), else F32 into f32 and I64 into i64 (others refused).
Safetensors Decode(const std::string& bytes, const std::string& path,
                   std::map<std::string, data::Array>* arrays) {
  auto bad = [&](const std::string& why) {
    return CheckpointError(path + " is not a valid safetensors file (" + why +
                           ")");
  };
  if (bytes.size() < 8) throw bad("shorter than its 8-byte header length");
  uint64_t length;
  std::memcpy(&length, bytes.data(), 8);
  if (length > bytes.size() - 8) {
    throw bad("a header of " + std::to_string(length) + " bytes in a file of " +
              std::to_string(bytes.size()));
  }
  const uint64_t data_at = 8 + length;
  const uint64_t data_bytes = bytes.size() - data_at;
  Safetensors file;
  // [begin, end) of every tensor, to check the data is covered once.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  try {
    const nlohmann::json header =
        nlohmann::json::parse(bytes.substr(8, length));
    if (!header.is_object()) throw bad("the header is not a JSON object");
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        for (const auto& [key, value] : entry.items()) {
          file.metadata[key] = value.get<std::string>();
        }
        continue;
      }
      const std::string dtype = entry.at("dtype").get<std::string>();
      const std::vector<int64_t> shape =
          IntegersOf(entry.at("shape"), name + "'s shape");
      IntegersOf(entry.at("data_offsets"), name + "'s data_offsets");
      const auto offsets =
          entry.at("data_offsets").get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1] ||
          offsets[1] > data_bytes) {
        throw bad("tensor " + name + "'s data_offsets lie outside the data");
      }
      const int64_t n = CheckedElements(shape);
      static const std::map<std::string, data::ElementType> kTypes = {
          {"U8", data::ElementType::kUint8},
          {"I8", data::ElementType::kInt8},
          {"I16", data::ElementType::kInt16},
          {"I32", data::ElementType::kInt32},
          {"I64", data::ElementType::kInt64},
          {"F32", data::ElementType::kFloat32},
          {"F64", data::ElementType::kFloat64}};
      const auto type = kTypes.find(dtype);
      const uint64_t width =
          arrays != nullptr
              ? (type == kTypes.end() ? 0 : data::ElementSize(type->second))
              : (dtype == "F32"   ? 4
                 : dtype == "I64" ? 8
                                  : 0);
      if (width == 0) {
        throw bad("tensor " + name + " is " + dtype +
                  (arrays != nullptr
                       ? "; data sets read U8, I8, I16, I32, I64, F32, F64"
                       : "; ringlet reads F32 and I64"));
      }
      if (n < 0 ||
          static_cast<uint64_t>(n) != (offsets[1] - offsets[0]) / width ||
          (offsets[1] - offsets[0]) % width != 0) {
        throw bad("tensor " + name + "'s shape does not fit its " +
                  std::to_string(offsets[1] - offsets[0]) + " bytes");
      }
      ranges.emplace_back(offsets[0], offsets[1]);
      const char* data = bytes.data() + data_at + offsets[0];
      if (arrays != nullptr) {
        data::Array& a = (*arrays)[name];
        a.type = type->second;
        a.dims = shape;
        a.bytes.assign(data, data + (offsets[1] - offsets[0]));
      } else if (width == 4) {
        CheckpointTensor t{name, shape, std::vector<float>(n)};
        std::memcpy(t.values.data(), data, n * sizeof(float));
        file.f32.push_back(std::move(t));
      } else {
        std::vector<int64_t> values(n);
        std::memcpy(values.data(), data, n * sizeof(int64_t));
        file.i64_shapes.emplace_back(name, shape);
        file.i64_values.push_back(std::move(values));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("header: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw bad(e.what());
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin != covered) {
      throw bad(begin < covered ? "two tensors share bytes"
                                : "bytes no tensor owns");
    }
    covered = end;
  }
  if (covered != data_bytes) throw bad("bytes no tensor owns at the end");
  return file;
}

}  // namespace

Safetensors DecodeSafetensors(const std::string& bytes,
                              const std::string& path) {
  return Decode(bytes, path, nullptr);
}

std::map<std::string, data::Array> DecodeSafetensorsArrays(
    const std::string& bytes, const std::string& path) {
  std::map<std::string, data::Array> arrays;
  Decode(bytes, path, &arrays);
  return arrays;
}

}  // namespace ringlet::trainers
