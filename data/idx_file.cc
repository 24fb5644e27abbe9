#include "data/idx_file.h"

#include <cstdio>
#include <cstring>

#include "data/byte_source.h"
#include "data/data_error.h"
#include "data/gzip_file.h"

namespace ringlet::data {
namespace {

constexpr uint8_t kUnsignedByteType = 0x08;

std::string ShapeString(const std::vector<int64_t>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += " x ";
    out += std::to_string(dims[i]);
  }
  return out.empty() ? "(scalar)" : out;
}

std::string HexByte(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02x", b);
  return buf;
}

bool TypeOf(uint8_t code, ElementType* type) {
  switch (code) {
    case 0x08:
      *type = ElementType::kUint8;
      return true;
    case 0x09:
      *type = ElementType::kInt8;
      return true;
    case 0x0B:
      *type = ElementType::kInt16;
      return true;
    case 0x0C:
      *type = ElementType::kInt32;
      return true;
    case 0x0D:
      *type = ElementType::kFloat32;
      return true;
    case 0x0E:
      *type = ElementType::kFloat64;
      return true;
    default:
      return false;
  }
}

// What a caller insists on before the body is read (ReadIdxGz's checks).
struct Expect {
  bool uint8_only = false;
  int rank = -1;  // -1: any.
};

// With `layout`, the header alone: the array's type and dims, no bytes.
Array ParseIdx(ByteSource& source, uint64_t max_bytes, const Expect& expect,
               FileLayout* layout = nullptr) {
  const std::string& path = source.path();
  uint8_t magic[4];
  ReadExactly(source, magic, sizeof(magic), "IDX header");
  if (magic[0] != 0 || magic[1] != 0) {
    throw DataError(path + ": not an IDX file (magic number starts with " +
                    HexByte(magic[0]) + " " + HexByte(magic[1]) +
                    ", expected 0x00 0x00)");
  }
  Array array;
  if (expect.uint8_only && magic[2] != kUnsignedByteType) {
    throw DataError(path + ": IDX data type " + HexByte(magic[2]) +
                    " is not supported (expected 0x08, unsigned byte)");
  }
  if (!TypeOf(magic[2], &array.type)) {
    throw DataError(path + ": IDX data type " + HexByte(magic[2]) +
                    " is not supported (0x08 uint8, 0x09 int8, 0x0b int16, "
                    "0x0c int32, 0x0d float32 or 0x0e float64)");
  }
  const int rank = magic[3];
  if (expect.rank >= 0 && rank != expect.rank) {
    throw DataError(path + ": IDX file has " + std::to_string(rank) +
                    " dimensions, expected " + std::to_string(expect.rank));
  }
  if (rank == 0) throw DataError(path + ": IDX file has 0 dimensions");
  array.dims.resize(rank);
  for (int i = 0; i < rank; ++i) {
    uint8_t be[4];
    ReadExactly(source, be, sizeof(be), "IDX header");
    array.dims[i] = (int64_t{be[0]} << 24) | (int64_t{be[1]} << 16) |
                    (int64_t{be[2]} << 8) | int64_t{be[3]};
    if (array.dims[i] == 0 && i > 0) {
      throw DataError(path + ": IDX dimension " + std::to_string(i) +
                      " is zero");
    }
  }
  // Checked before any allocation, so a corrupt header cannot ask for
  // gigabytes, and with overflow detection, so it cannot wrap around either.
  const size_t size = ElementSize(array.type);
  const int64_t elements = ElementsOf(array.dims, INT64_MAX / 8);
  if (elements < 0 || static_cast<uint64_t>(elements) * size > max_bytes) {
    throw DataError(path + ": IDX header describes " + ShapeString(array.dims) +
                    " elements of " + std::to_string(size) +
                    " bytes, more than the " + std::to_string(max_bytes) +
                    "-byte limit; the header is corrupt");
  }
  const uint64_t total = static_cast<uint64_t>(elements) * size;
  if (source.remaining() >= 0 &&
      static_cast<uint64_t>(source.remaining()) != total) {
    throw DataError(path + ": the IDX header promises " +
                    ShapeString(array.dims) + " = " + std::to_string(total) +
                    " bytes of data, the file holds " +
                    std::to_string(source.remaining()) +
                    "; the file is cut short or its header is wrong");
  }
  if (layout != nullptr) {
    if (source.remaining() < 0) {
      throw DataError(path +
                      ": a compressed IDX file cannot be read in "
                      "place; gunzip it");
    }
    layout->offset = 4 + 4 * static_cast<uint64_t>(rank);
    layout->swap_bytes = size > 1;
    return array;
  }
  array.bytes = ReadBody(source, total, ShapeString(array.dims));
  // Counted up to a limit: a small file may inflate to terabytes.
  constexpr uint64_t kCountedExtra = 1 << 20;
  const uint64_t extra = source.DrainRemaining(kCountedExtra);
  if (extra > 0) {
    throw DataError(path + ": " +
                    (extra > kCountedExtra
                         ? "more than " + std::to_string(kCountedExtra)
                         : std::to_string(extra)) +
                    " bytes after the data the header describes (" +
                    ShapeString(array.dims) + "); the header is wrong");
  }
  // IDX is big-endian; this machine (x86-64) is not.
  SwapBytes(array.bytes.data(), elements, size);
  return array;
}

}  // namespace

Array ReadIdx(const std::string& path, uint64_t max_bytes) {
  std::unique_ptr<ByteSource> source = OpenBytes(path);
  return ParseIdx(*source, max_bytes, Expect{});
}

Array ReadIdxLayout(const std::string& path, FileLayout* layout,
                    uint64_t max_bytes) {
  std::unique_ptr<ByteSource> source = OpenBytes(path);
  return ParseIdx(*source, max_bytes, Expect{}, layout);
}

IdxArray ReadIdxGz(const std::string& path, int expected_rank,
                   uint64_t max_bytes) {
  GzipReader reader(path);
  Array array = ParseIdx(reader, max_bytes, Expect{true, expected_rank});
  IdxArray out;
  for (int64_t d : array.dims) out.dims.push_back(static_cast<uint32_t>(d));
  out.data = std::move(array.bytes);
  return out;
}

}  // namespace ringlet::data
