#include "data/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>

#include "data/byte_source.h"
#include "data/data_error.h"
#include "nlohmann/json.hpp"

namespace ringlet::data {
namespace {

const std::vector<std::pair<std::string, ElementType>>& DtypeNames() {
  static const std::vector<std::pair<std::string, ElementType>> kNames = {
      {"U8", ElementType::kUint8},   {"I8", ElementType::kInt8},
      {"I16", ElementType::kInt16},  {"I32", ElementType::kInt32},
      {"I64", ElementType::kInt64},  {"F32", ElementType::kFloat32},
      {"F64", ElementType::kFloat64}};
  return kNames;
}

std::string DtypeOf(ElementType type) {
  for (const auto& [name, t] : DtypeNames()) {
    if (t == type) return name;
  }
  throw std::invalid_argument(std::string("safetensors: no dtype for ") +
                              ToString(type));
}

// -1 for a negative dimension or a product past int64.
int64_t ElementsOf(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

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

std::string EncodeSafetensors(const SafetensorsFile& file) {
  nlohmann::ordered_json header;
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::set<std::string> names;
  uint64_t at = 0;
  for (const auto& [name, array] : file.tensors) {
    if (name == "__metadata__" || !names.insert(name).second) {
      throw std::invalid_argument(
          "safetensors: the name " + name +
          (name == "__metadata__" ? " is reserved" : " is given twice"));
    }
    const int64_t n = ElementsOf(array.dims);
    if (n < 0 || static_cast<uint64_t>(n) * ElementSize(array.type) !=
                     array.bytes.size()) {
      throw std::invalid_argument(
          "safetensors: tensor " + name + " is " + array.Describe() + " in " +
          std::to_string(array.bytes.size()) + " bytes");
    }
    const uint64_t bytes = array.bytes.size();
    header[name] = {{"dtype", DtypeOf(array.type)},
                    {"shape", array.dims},
                    {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t length = text.size();
  std::memcpy(out.data(), &length, 8);  // Little-endian on x86-64.
  out += text;
  for (const auto& [name, array] : file.tensors) {
    out.append(reinterpret_cast<const char*>(array.bytes.data()),
               array.bytes.size());
  }
  return out;
}

SafetensorsFile DecodeSafetensors(const std::string& bytes,
                                  const std::string& path) {
  auto bad = [&](const std::string& why) {
    return DataError(path + " is not a valid safetensors file (" + why + ")");
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
  SafetensorsFile file;
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
      const auto type =
          std::find_if(DtypeNames().begin(), DtypeNames().end(),
                       [&](const auto& known) { return known.first == dtype; });
      if (type == DtypeNames().end()) {
        throw bad("tensor " + name + " is " + dtype +
                  "; ringlet reads U8, I8, I16, I32, I64, F32 and F64");
      }
      const uint64_t width = ElementSize(type->second);
      const uint64_t size = offsets[1] - offsets[0];
      const int64_t n = ElementsOf(shape);
      if (n < 0 || size % width != 0 ||
          static_cast<uint64_t>(n) != size / width) {
        throw bad("tensor " + name + "'s shape does not fit its " +
                  std::to_string(size) + " bytes");
      }
      ranges.emplace_back(offsets[0], offsets[1]);
      Array a;
      a.type = type->second;
      a.dims = shape;
      const char* at = bytes.data() + data_at + offsets[0];
      a.bytes.assign(at, at + size);
      file.tensors.emplace_back(name, std::move(a));
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
  std::sort(file.tensors.begin(), file.tensors.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return file;
}

SafetensorsFile ReadSafetensors(const std::string& path, uint64_t max_bytes) {
  std::unique_ptr<ByteSource> source = OpenBytes(path);
  std::string bytes;
  if (source->remaining() >= 0) {
    const uint64_t size = static_cast<uint64_t>(source->remaining());
    if (size > max_bytes) {
      throw DataError(path + ": " + std::to_string(size) + " bytes pass the " +
                      std::to_string(max_bytes) + "-byte limit");
    }
    const std::vector<uint8_t> body = ReadBody(*source, size, "safetensors");
    bytes.assign(body.begin(), body.end());
  } else {  // Compressed: grown as the bytes arrive, up to the limit.
    char piece[1 << 16];
    for (size_t got; (got = source->Read(piece, sizeof(piece))) > 0;) {
      if (bytes.size() + got > max_bytes) {
        throw DataError(path + ": more than the " + std::to_string(max_bytes) +
                        "-byte limit once decompressed");
      }
      bytes.append(piece, got);
    }
  }
  return DecodeSafetensors(bytes, path);
}

void WriteSafetensors(const std::string& path, const SafetensorsFile& file) {
  const std::string bytes = EncodeSafetensors(file);
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      const std::string why = std::strerror(errno);
      std::remove(temporary.c_str());
      throw std::runtime_error("cannot write " + temporary + " (" + why + ")");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw std::runtime_error("cannot write " + path + " (" + why + ")");
  }
}

std::map<std::string, Array> ArraysByName(SafetensorsFile file) {
  std::map<std::string, Array> out;
  for (auto& [name, array] : file.tensors) out[name] = std::move(array);
  return out;
}

}  // namespace ringlet::data
