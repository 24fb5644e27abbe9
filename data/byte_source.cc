#include "data/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <new>

#include "data/data_error.h"
#include "data/gzip_file.h"
#include "host/memory.h"

namespace ringlet::data {
namespace {

class PlainFile : public ByteSource {
 public:
  explicit PlainFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) {
      throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
    }
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      const bool folder = S_ISDIR(st.st_mode);
      ::close(fd_);
      throw DataError(path + ": not a regular file" +
                      (folder ? " (it is a folder)" : ""));
    }
    // O_NONBLOCK only kept a FIFO from blocking the open above.
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    left_ = static_cast<int64_t>(st.st_size);
  }
  ~PlainFile() override { ::close(fd_); }

  size_t Read(void* out, size_t size) override {
    size_t done = 0;
    while (done < size) {
      const ssize_t got =
          ::read(fd_, static_cast<char*>(out) + done, size - done);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        throw DataError(path_ + ": cannot read (" + std::strerror(errno) + ")");
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    left_ = std::max<int64_t>(0, left_ - static_cast<int64_t>(done));
    return done;
  }

  uint64_t DrainRemaining(uint64_t limit) override {
    const uint64_t left = static_cast<uint64_t>(left_);
    left_ = 0;
    return std::min(left, limit + 1);
  }

  int64_t remaining() const override { return left_; }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  int64_t left_ = 0;
};

class MemoryBytes : public ByteSource {
 public:
  MemoryBytes(std::string bytes, std::string name)
      : bytes_(std::move(bytes)), name_(std::move(name)) {}
  size_t Read(void* out, size_t size) override {
    const size_t n = std::min(size, bytes_.size() - at_);
    if (n > 0) std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
    return n;
  }
  uint64_t DrainRemaining(uint64_t limit) override {
    const uint64_t left = bytes_.size() - at_;
    at_ = bytes_.size();
    return std::min(left, limit + 1);
  }
  int64_t remaining() const override {
    return static_cast<int64_t>(bytes_.size() - at_);
  }
  const std::string& path() const override { return name_; }

 private:
  std::string bytes_;
  std::string name_;
  size_t at_ = 0;
};

}  // namespace

uint64_t ByteSource::DrainRemaining(uint64_t limit) {
  uint8_t buffer[64 * 1024];
  uint64_t total = 0;
  while (total <= limit) {
    const size_t n = Read(buffer, sizeof(buffer));
    if (n == 0) break;
    total += n;
  }
  return std::min(total, limit + 1);
}

std::unique_ptr<ByteSource> BytesInMemory(std::string bytes, std::string name) {
  return std::make_unique<MemoryBytes>(std::move(bytes), std::move(name));
}

std::unique_ptr<ByteSource> OpenBytes(const std::string& path) {
  auto plain = std::make_unique<PlainFile>(path);
  uint8_t magic[2] = {0, 0};
  const size_t got = plain->Read(magic, 2);
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    return std::make_unique<GzipReader>(path);
  }
  return std::make_unique<PlainFile>(path);  // From its start again.
}

std::vector<uint8_t> ReadBody(ByteSource& source, uint64_t total,
                              const std::string& described) {
  const std::string& path = source.path();
  const int64_t size =
      static_cast<int64_t>(std::min<uint64_t>(total, INT64_MAX));
  const std::string shortfall = host::HostMemoryShortfall(size);
  if (!shortfall.empty()) {
    throw DataError(path + ": its data (" + described + ", " +
                    host::FormatBytes(size) + ") does not fit: " + shortfall +
                    "; use a machine with more memory, or a smaller file");
  }
  std::vector<uint8_t> bytes;
  uint64_t got = 0;
  try {
    if (source.remaining() >= 0) {
      // A plain file of exactly this size (the readers check it first).
      bytes.resize(total);
      got = source.Read(bytes.data(), total);
    } else {
      // Address space for all of it, pages only for what arrives.
      constexpr uint64_t kPiece = uint64_t{16} << 20;
      bytes.reserve(total);
      while (got < total) {
        const uint64_t want = std::min(kPiece, total - got);
        bytes.resize(got + want);
        const size_t n = source.Read(bytes.data() + got, want);
        got += n;
        if (n < want) break;
      }
    }
  } catch (const std::bad_alloc&) {
    throw DataError(path + ": its data (" + described + ", " +
                    host::FormatBytes(size) +
                    ") could not be allocated; use a machine with more "
                    "memory, or a smaller file");
  }
  if (got != total) {
    throw DataError(path + ": truncated data: the header promises " +
                    described + " = " + std::to_string(total) +
                    " bytes, the file holds " + std::to_string(got));
  }
  return bytes;
}

void ReadExactly(ByteSource& source, void* out, size_t size, const char* what) {
  const size_t got = source.Read(out, size);
  if (got != size) {
    throw DataError(source.path() + ": file ends inside the " + what +
                    " (needed " + std::to_string(size) + " bytes, found " +
                    std::to_string(got) + ")");
  }
}

}  // namespace ringlet::data
