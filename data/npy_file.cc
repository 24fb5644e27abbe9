#include "data/npy_file.h"

#include <cctype>
#include <cstring>
#include <memory>

#include "data/byte_source.h"
#include "data/data_error.h"

namespace ringlet::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;

// The value of 'key' in the header's dict literal, up to the next
// top-level ',' or '}' (a shape's tuple whole); throws when absent.
std::string ValueOf(const std::string& header, const std::string& key,
                    const std::string& path) {
  const std::string quoted[] = {"'" + key + "'", "\"" + key + "\""};
  size_t at = std::string::npos;
  for (const std::string& q : quoted) {
    at = header.find(q);
    if (at != std::string::npos) {
      at += q.size();
      break;
    }
  }
  if (at == std::string::npos) {
    throw DataError(path + ": the npy header has no '" + key + "'");
  }
  while (at < header.size() &&
         std::isspace(static_cast<unsigned char>(header[at]))) {
    ++at;
  }
  if (at >= header.size() || header[at] != ':') {
    throw DataError(path + ": the npy header's '" + key + "' has no value");
  }
  ++at;
  int depth = 0;
  size_t end = at;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
    if (depth < 0) break;
  }
  if (end >= header.size() || depth != 0) {
    throw DataError(path + ": the npy header's '" + key +
                    "' value does not end");
  }
  size_t b = at, e = end;
  while (b < e && std::isspace(static_cast<unsigned char>(header[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(header[e - 1]))) --e;
  return header.substr(b, e - b);
}

void TypeOf(const std::string& descr, const std::string& path,
            ElementType* type, bool* swap) {
  std::string d = descr;
  if (d.size() >= 2 && (d.front() == '\'' || d.front() == '"') &&
      d.back() == d.front()) {
    d = d.substr(1, d.size() - 2);
  } else {
    throw DataError(path + ": the npy type " + descr +
                    " is not a plain type (structured arrays are not read); "
                    "save a plain array, e.g. np.save(f, x.astype('float32'))");
  }
  static const struct {
    const char* code;
    ElementType type;
  } kTypes[] = {{"u1", ElementType::kUint8},  {"i1", ElementType::kInt8},
                {"i2", ElementType::kInt16},  {"i4", ElementType::kInt32},
                {"i8", ElementType::kInt64},  {"f4", ElementType::kFloat32},
                {"f8", ElementType::kFloat64}};
  if (d.size() == 3 &&
      (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
    for (const auto& t : kTypes) {
      if (d.compare(1, 2, t.code) == 0) {
        *type = t.type;
        *swap = d[0] == '>' && ElementSize(t.type) > 1;
        return;
      }
    }
  }
  throw DataError(path + ": the npy type '" + d +
                  "' is not read (uint8, int8, int16, int32, int64, float32 "
                  "or float64); save it as one of those, e.g. "
                  "x.astype('float32')");
}

std::vector<int64_t> ShapeOf(const std::string& text, const std::string& path) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
    throw DataError(path + ": the npy shape " + text + " is not a tuple");
  }
  std::vector<int64_t> dims;
  size_t i = 1;
  const size_t end = text.size() - 1;
  while (i < end) {
    while (i < end && (std::isspace(static_cast<unsigned char>(text[i])) ||
                       text[i] == ',')) {
      ++i;
    }
    if (i >= end) break;
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      throw DataError(path + ": the npy shape " + text +
                      " is not a tuple of whole numbers");
    }
    int64_t d = 0;
    while (i < end && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (__builtin_mul_overflow(d, 10, &d) ||
          __builtin_add_overflow(d, text[i] - '0', &d)) {
        throw DataError(path + ": the npy shape " + text + " overflows");
      }
      ++i;
    }
    // Python writes "3L" for longs in version-1 files of old NumPy.
    if (i < end && text[i] == 'L') ++i;
    dims.push_back(d);
    if (dims.size() > 32) {
      throw DataError(path + ": the npy shape has more than 32 dimensions");
    }
  }
  return dims;
}

Array ParseNpy(ByteSource& bytes, uint64_t max_bytes, FileLayout* layout);

}  // namespace

Array ReadNpy(const std::string& path, uint64_t max_bytes) {
  std::unique_ptr<ByteSource> source = OpenBytes(path);
  return ReadNpy(*source, max_bytes);
}

Array ReadNpy(ByteSource& bytes, uint64_t max_bytes) {
  return ParseNpy(bytes, max_bytes, nullptr);
}

Array ReadNpyLayout(const std::string& path, FileLayout* layout,
                    uint64_t max_bytes) {
  std::unique_ptr<ByteSource> source = OpenBytes(path);
  return ParseNpy(*source, max_bytes, layout);
}

namespace {

Array ParseNpy(ByteSource& bytes, uint64_t max_bytes, FileLayout* layout) {
  ByteSource* const source = &bytes;
  const std::string& path = bytes.path();
  char magic[kMagicBytes + 2];
  ReadExactly(*source, magic, sizeof(magic), "npy header");
  if (std::memcmp(magic, kMagic, kMagicBytes) != 0) {
    throw DataError(path +
                    ": not a .npy file (it does not start with "
                    "\\x93NUMPY)");
  }
  const int major = static_cast<uint8_t>(magic[kMagicBytes]);
  uint32_t header_bytes = 0;
  if (major == 1) {
    uint8_t le[2];
    ReadExactly(*source, le, 2, "npy header");
    header_bytes = le[0] | (uint32_t{le[1]} << 8);
  } else if (major == 2 || major == 3) {
    uint8_t le[4];
    ReadExactly(*source, le, 4, "npy header");
    header_bytes = le[0] | (uint32_t{le[1]} << 8) | (uint32_t{le[2]} << 16) |
                   (uint32_t{le[3]} << 24);
  } else {
    throw DataError(path + ": npy format version " + std::to_string(major) +
                    " is not read (versions 1, 2 and 3 are)");
  }
  if (header_bytes > kMaxHeaderBytes) {
    throw DataError(path + ": the npy header claims " +
                    std::to_string(header_bytes) + " bytes, more than " +
                    std::to_string(kMaxHeaderBytes) + "; the file is corrupt");
  }
  std::string header(header_bytes, '\0');
  ReadExactly(*source, header.data(), header_bytes, "npy header");

  Array array;
  bool swap = false;
  TypeOf(ValueOf(header, "descr", path), path, &array.type, &swap);
  const std::string order = ValueOf(header, "fortran_order", path);
  if (order != "False") {
    throw DataError(path +
                    ": the array is in Fortran order (fortran_order: " + order +
                    "); save it in C order, e.g. "
                    "np.save(f, np.ascontiguousarray(x))");
  }
  array.dims = ShapeOf(ValueOf(header, "shape", path), path);
  const size_t size = ElementSize(array.type);
  const int64_t elements = ElementsOf(array.dims, INT64_MAX / 8);
  if (elements < 0 || static_cast<uint64_t>(elements) * size > max_bytes) {
    throw DataError(path + ": the npy header describes " + array.Describe() +
                    ", more than the " + std::to_string(max_bytes) +
                    "-byte limit");
  }
  const uint64_t total = static_cast<uint64_t>(elements) * size;
  if (source->remaining() >= 0 &&
      static_cast<uint64_t>(source->remaining()) != total) {
    throw DataError(path + ": the npy header promises " + array.Describe() +
                    " = " + std::to_string(total) +
                    " bytes of data, the file "
                    "holds " +
                    std::to_string(source->remaining()) +
                    "; the file is cut short or its header is wrong");
  }
  if (layout != nullptr) {
    if (source->remaining() < 0) {
      throw DataError(path +
                      ": a compressed .npy file cannot be read in "
                      "place; gunzip it");
    }
    layout->offset = kMagicBytes + 2 + (major == 1 ? 2 : 4) + header_bytes;
    layout->swap_bytes = swap;
    return array;
  }
  array.bytes = ReadBody(*source, total, array.Describe());
  const uint64_t extra = source->DrainRemaining(1 << 20);
  if (extra > 0) {
    throw DataError(path + ": bytes after the data the npy header describes (" +
                    array.Describe() + "); the header is wrong");
  }
  if (swap) SwapBytes(array.bytes.data(), elements, size);
  return array;
}

}  // namespace

std::string NpyBytes(const Array& array) {
  static const char* kCodes[] = {"|u1", "|i1", "<i2", "<i4",
                                 "<i8", "<f4", "<f8"};
  // Python's tuples: "()", "(3,)", "(3, 4)".
  std::string shape = "(";
  for (size_t i = 0; i < array.dims.size(); ++i) {
    shape += (i ? ", " : "") + std::to_string(array.dims[i]);
  }
  shape += array.dims.size() == 1 ? ",)" : ")";
  std::string header = std::string("{'descr': '") +
                       kCodes[static_cast<int>(array.type)] +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic, version, 2-byte length, header and '\n' padded to 64 bytes.
  const size_t unpadded = kMagicBytes + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, kMagicBytes);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(array.bytes.data()),
             array.bytes.size());
  return out;
}

}  // namespace ringlet::data
