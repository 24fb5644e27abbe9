#include "data/gzip_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "data/data_error.h"

namespace ringlet::data {
namespace {

// windowBits 15 plus 16 accepts the gzip wrapper only (not raw zlib data).
constexpr int kGzipWindowBits = 15 + 16;
constexpr size_t kInputChunk = 256 * 1024;

std::string HexBytes(const uint8_t* bytes, size_t count) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < count; ++i) {
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
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) {
    throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
  }
  struct stat st;
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw DataError(path + ": not a regular file" +
                    (S_ISDIR(st.st_mode) ? " (it is a folder)" : ""));
  }
  // O_NONBLOCK only kept a FIFO from blocking the open above.
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  file_bytes_ = static_cast<uint64_t>(st.st_size);
  try {
    Refill(2);
  } catch (...) {
    ::close(fd_);
    throw;
  }
  if (input_.size() < 2 || input_[0] != 0x1f || input_[1] != 0x8b) {
    const std::string first =
        input_.empty()
            ? std::string("none, the file is empty")
            : HexBytes(input_.data(), std::min<size_t>(4, input_.size()));
    ::close(fd_);
    throw DataError(path + ": not a gzip file (first bytes: " + first +
                    "; expected 1f 8b)");
  }
  stream_ = new Stream;
  if (inflateInit2(&stream_->z, kGzipWindowBits) != Z_OK) {
    delete stream_;
    ::close(fd_);
    throw DataError(path + ": zlib could not start decompressing");
  }
  stream_->z.next_in = input_.data();
  stream_->z.avail_in = static_cast<uInt>(input_.size());
}

GzipReader::~GzipReader() {
  if (stream_ != nullptr) {
    inflateEnd(&stream_->z);
    delete stream_;
  }
  if (fd_ >= 0) ::close(fd_);
}

size_t GzipReader::Refill(size_t want) {
  // The unread bytes move to the front, then the buffer grows by a chunk.
  size_t unread = input_.size();
  if (stream_ != nullptr) {
    unread = stream_->z.avail_in;
    std::memmove(input_.data(), stream_->z.next_in, unread);
  }
  input_.resize(unread);
  while (input_.size() < want) {
    const size_t old = input_.size();
    input_.resize(old + kInputChunk);
    ssize_t n;
    do {
      n = ::read(fd_, input_.data() + old, kInputChunk);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      throw DataError(path_ + ": read failed (" + std::strerror(errno) + ")");
    }
    input_.resize(old + static_cast<size_t>(n));
    file_read_ += static_cast<uint64_t>(n);
    if (n == 0) break;
  }
  if (stream_ != nullptr) {
    stream_->z.next_in = input_.data();
    stream_->z.avail_in = static_cast<uInt>(input_.size());
  }
  return input_.size();
}

size_t GzipReader::Read(void* out, size_t size) {
  z_stream& z = stream_->z;
  auto* dst = static_cast<uint8_t*>(out);
  size_t written = 0;
  while (written < size && !finished_) {
    if (z.avail_in == 0) Refill(1);
    // avail_out is 32-bit; large reads go in slices.
    const size_t slice = std::min<size_t>(size - written, 1u << 30);
    z.next_out = dst + written;
    z.avail_out = static_cast<uInt>(slice);
    const int rc = inflate(&z, Z_NO_FLUSH);
    written += slice - z.avail_out;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (as `cat a.gz b.gz` makes).
      if (Refill(2) == 0) {
        finished_ = true;
      } else if (z.avail_in < 2 || z.next_in[0] != 0x1f ||
                 z.next_in[1] != 0x8b) {
        const uint64_t stray = file_bytes_ - (file_read_ - z.avail_in);
        throw DataError(path_ + ": " + std::to_string(stray) +
                        " stray bytes after the end of the gzip data");
      } else {
        inflateReset(&z);
      }
    } else if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      if (Refill(1) == 0) {
        throw DataError(path_ +
                        ": truncated gzip stream (the file ends before the "
                        "compressed data does); download or copy it again");
      }
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw DataError(
          path_ + ": corrupt gzip data (zlib: " +
          (z.msg != nullptr ? z.msg : "error " + std::to_string(rc)) + ")");
    }
  }
  return written;
}

}  // namespace ringlet::data
