#include "data/idx_file.h"

#include <cstdio>

#include "data/data_error.h"
#include "data/gzip_file.h"

namespace ringlet::data {
namespace {

constexpr uint8_t kUnsignedByteType = 0x08;

std::string ShapeString(const std::vector<uint32_t>& dims) {
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

void ReadExactly(GzipReader& reader, void* out, size_t size, const char* what) {
  const size_t got = reader.Read(out, size);
  if (got != size) {
    throw DataError(reader.path() + ": file ends inside the " + what +
                    " (needed " + std::to_string(size) + " bytes, found " +
                    std::to_string(got) + ")");
  }
}

}  // namespace

IdxArray ReadIdxGz(const std::string& path, int expected_rank,
                   uint64_t max_bytes) {
  GzipReader reader(path);

  uint8_t magic[4];
  ReadExactly(reader, magic, sizeof(magic), "IDX header");
  if (magic[0] != 0 || magic[1] != 0) {
    throw DataError(path + ": not an IDX file (magic number starts with " +
                    HexByte(magic[0]) + " " + HexByte(magic[1]) +
                    ", expected 0x00 0x00)");
  }
  if (magic[2] != kUnsignedByteType) {
    throw DataError(path + ": IDX data type " + HexByte(magic[2]) +
                    " is not supported (expected 0x08, unsigned byte)");
  }
  if (magic[3] != expected_rank) {
    throw DataError(path + ": IDX file has " + std::to_string(magic[3]) +
                    " dimensions, expected " + std::to_string(expected_rank));
  }

  IdxArray array;
  array.dims.resize(expected_rank);
  for (int i = 0; i < expected_rank; ++i) {
    uint8_t be[4];
    ReadExactly(reader, be, sizeof(be), "IDX header");
    array.dims[i] = (uint32_t{be[0]} << 24) | (uint32_t{be[1]} << 16) |
                    (uint32_t{be[2]} << 8) | uint32_t{be[3]};
    if (array.dims[i] == 0 && i > 0) {
      throw DataError(path + ": IDX dimension " + std::to_string(i) +
                      " is zero");
    }
  }
  // Checked before any allocation, so a corrupt header cannot ask for
  // gigabytes, and with overflow detection, so it cannot wrap around either.
  uint64_t total = 1;
  bool overflow = false;
  for (uint32_t d : array.dims)
    overflow |= __builtin_mul_overflow(total, d, &total);
  if (overflow || total > max_bytes) {
    throw DataError(path + ": IDX header describes " + ShapeString(array.dims) +
                    " elements, more than the " + std::to_string(max_bytes) +
                    "-byte limit; the header is corrupt");
  }

  array.data.resize(total);
  const size_t got = reader.Read(array.data.data(), total);
  if (got != total) {
    throw DataError(path + ": truncated data: the header promises " +
                    ShapeString(array.dims) + " = " + std::to_string(total) +
                    " bytes, the file holds " + std::to_string(got));
  }
  // Counted up to a limit: a small file may inflate to terabytes.
  constexpr uint64_t kCountedExtra = 1 << 20;
  const uint64_t extra = reader.DrainRemaining(kCountedExtra);
  if (extra > 0) {
    throw DataError(path + ": " +
                    (extra > kCountedExtra
                         ? "more than " + std::to_string(kCountedExtra)
                         : std::to_string(extra)) +
                    " bytes after the data the header describes (" +
                    ShapeString(array.dims) + "); the header is wrong");
  }
  return array;
}

}  // namespace ringlet::data
