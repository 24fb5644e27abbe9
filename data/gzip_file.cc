#include "data/gzip_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "data/data_error.h"

namespace ringlet::data {
namespace {

// windowBits 15 plus 16 accepts the gzip wrapper only (not raw zlib data).
constexpr int kGzipWindowBits = 15 + 16;

std::string HexBytes(const std::vector<uint8_t>& bytes, size_t count) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < count && i < bytes.size(); ++i) {
    std::snprintf(buf, sizeof(buf), "%02x ", bytes[i]);
    out += buf;
  }
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace

struct GzipReader::Stream {
  z_stream z{};
};

GzipReader::GzipReader(const std::string& path)
    : path_(path), stream_(nullptr) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) {
    throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
  }
  const std::streamsize size = file.tellg();
  file.seekg(0);
  compressed_.resize(static_cast<size_t>(size));
  if (size > 0 &&
      !file.read(reinterpret_cast<char*>(compressed_.data()), size)) {
    throw DataError(path + ": read failed");
  }
  if (compressed_.size() < 2 || compressed_[0] != 0x1f ||
      compressed_[1] != 0x8b) {
    throw DataError(path + ": not a gzip file (first bytes: " +
                    (compressed_.empty()
                         ? std::string("none, the file is empty")
                         : HexBytes(compressed_, 4)) +
                    "; expected 1f 8b)");
  }
  stream_ = new Stream;
  if (inflateInit2(&stream_->z, kGzipWindowBits) != Z_OK) {
    delete stream_;
    throw DataError(path + ": zlib could not start decompressing");
  }
  stream_->z.next_in = compressed_.data();
  stream_->z.avail_in = static_cast<uInt>(compressed_.size());
}

GzipReader::~GzipReader() {
  if (stream_ != nullptr) {
    inflateEnd(&stream_->z);
    delete stream_;
  }
}

size_t GzipReader::Read(void* out, size_t size) {
  z_stream& z = stream_->z;
  auto* dst = static_cast<uint8_t*>(out);
  size_t written = 0;
  while (written < size && !finished_) {
    // avail_out is 32-bit; large reads go in slices.
    const size_t slice = std::min<size_t>(size - written, 1u << 30);
    z.next_out = dst + written;
    z.avail_out = static_cast<uInt>(slice);
    const int rc = inflate(&z, Z_NO_FLUSH);
    written += slice - z.avail_out;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (as `cat a.gz b.gz` makes).
      if (z.avail_in > 0) {
        if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b) {
          throw DataError(path_ + ": " + std::to_string(z.avail_in) +
                          " stray bytes after the end of the gzip data");
        }
        inflateReset(&z);
      } else {
        finished_ = true;
      }
    } else if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      throw DataError(path_ +
                      ": truncated gzip stream (the file ends before the "
                      "compressed data does); download or copy it again");
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw DataError(
          path_ + ": corrupt gzip data (zlib: " +
          (z.msg != nullptr ? z.msg : "error " + std::to_string(rc)) + ")");
    }
  }
  return written;
}

uint64_t GzipReader::DrainRemaining() {
  uint8_t buffer[64 * 1024];
  uint64_t total = 0;
  while (size_t n = Read(buffer, sizeof(buffer))) total += n;
  return total;
}

}  // namespace ringlet::data
