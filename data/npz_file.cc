#include "data/npz_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "data/byte_source.h"
#include "data/data_error.h"
#include "data/npy_file.h"
#include "host/memory.h"

namespace ringlet::data {
namespace {

uint64_t Le(const std::string& b, uint64_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  }
  return v;
}

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out->push_back(static_cast<char>(v >> (8 * i)));
}

struct Member {
  std::string name;
  int method = 0;
  uint32_t crc = 0;
  uint64_t packed = 0, size = 0, header = 0;
};

// The archive's file, read where a part is needed (pread): neither the
// archive nor a member is ever read whole into memory.
class ArchiveFile {
 public:
  explicit ArchiveFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) {
      throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
    }
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw DataError(path + ": not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~ArchiveFile() { ::close(fd_); }
  ArchiveFile(const ArchiveFile&) = delete;
  ArchiveFile& operator=(const ArchiveFile&) = delete;

  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Bytes [at, at + n), which the caller checked lie in the file; a file
  // that shrank since is a DataError.
  void ReadAt(uint64_t at, void* out, size_t n) const {
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd_, static_cast<char*>(out) + done, n - done,
                                  static_cast<off_t>(at + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        throw DataError(path_ + ": cannot read (" + std::strerror(errno) + ")");
      }
      if (got == 0) {
        throw DataError(path_ + ": the file is shorter than it was");
      }
      done += static_cast<size_t>(got);
    }
  }
  std::string ReadString(uint64_t at, size_t n) const {
    std::string out(n, '\0');
    ReadAt(at, out.data(), n);
    return out;
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The archive's bytes [at, at + n) exist, or a DataError naming `what`.
void CheckRange(const ArchiveFile& file, uint64_t at, uint64_t n,
                const std::string& what) {
  if (at > file.size() || n > file.size() - at) {
    throw DataError(file.path() + ": " + what +
                    " lies past the end of the file; the archive is cut "
                    "short or corrupt");
  }
}

std::vector<Member> CentralDirectory(const ArchiveFile& file) {
  const std::string& path = file.path();
  // The end-of-central-directory record: the last "PK\5\6" in the final
  // 22 + 65535 bytes (its comment may run up to 65535).
  const uint64_t tail_at =
      file.size() > 22 + 65535 ? file.size() - 22 - 65535 : 0;
  const std::string tail =
      file.ReadString(tail_at, static_cast<size_t>(file.size() - tail_at));
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail.size()) - 22; i >= 0; --i) {
    if (tail.compare(i, 4, "PK\x05\x06") == 0) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) {
    throw DataError(path +
                    ": not an .npz (zip) file: no end of central "
                    "directory record");
  }
  uint64_t entries = Le(tail, eocd + 10, 2), cd_size = Le(tail, eocd + 12, 4),
           cd_at = Le(tail, eocd + 16, 4);
  if (entries == 0xffff || cd_size == 0xffffffff || cd_at == 0xffffffff) {
    // ZIP64: its locator sits just before, pointing at its own record.
    if (eocd < 20 || tail.compare(eocd - 20, 4, "PK\x06\x07") != 0) {
      throw DataError(path + ": a ZIP64 archive without its locator");
    }
    const uint64_t record_at = Le(tail, eocd - 20 + 8, 8);
    CheckRange(file, record_at, 56, "the ZIP64 directory record");
    const std::string record = file.ReadString(record_at, 56);
    if (record.compare(0, 4, "PK\x06\x06") != 0) {
      throw DataError(path + ": the ZIP64 directory record is missing");
    }
    entries = Le(record, 32, 8);
    cd_size = Le(record, 40, 8);
    cd_at = Le(record, 48, 8);
  }
  CheckRange(file, cd_at, cd_size, "the central directory");
  // Each entry takes at least 46 bytes of the directory.
  if (entries > cd_size / 46) {
    throw DataError(path + ": the central directory claims " +
                    std::to_string(entries) + " members in " +
                    std::to_string(cd_size) + " bytes; the archive is corrupt");
  }
  const std::string shortfall =
      host::HostMemoryShortfall(static_cast<int64_t>(cd_size));
  if (!shortfall.empty()) {
    throw DataError(path + ": its central directory (" +
                    host::FormatBytes(static_cast<int64_t>(cd_size)) +
                    ") does not fit: " + shortfall);
  }
  const std::string f = file.ReadString(cd_at, static_cast<size_t>(cd_size));
  std::vector<Member> members;
  uint64_t at = 0;
  for (uint64_t e = 0; e < entries; ++e) {
    if (at + 46 > f.size()) {
      throw DataError(path + ": central directory entry " + std::to_string(e) +
                      " lies past the directory's end; the archive is "
                      "corrupt");
    }
    if (f.compare(at, 4, "PK\x01\x02") != 0) {
      throw DataError(path + ": central directory entry " + std::to_string(e) +
                      " is corrupt");
    }
    Member m;
    const uint64_t flags = Le(f, at + 8, 2);
    m.method = static_cast<int>(Le(f, at + 10, 2));
    m.crc = static_cast<uint32_t>(Le(f, at + 16, 4));
    m.packed = Le(f, at + 20, 4);
    m.size = Le(f, at + 24, 4);
    const uint64_t name_len = Le(f, at + 28, 2), extra_len = Le(f, at + 30, 2),
                   comment_len = Le(f, at + 32, 2);
    m.header = Le(f, at + 42, 4);
    if (at + 46 + name_len + extra_len + comment_len > f.size()) {
      throw DataError(path +
                      ": a member's name lies past the end of the "
                      "central directory; the archive is corrupt");
    }
    m.name = f.substr(at + 46, name_len);
    // ZIP64's extra field holds the 8-byte values whose 4-byte ones are
    // all ones, in this order.
    uint64_t x = at + 46 + name_len;
    const uint64_t extra_end = x + extra_len;
    while (x + 4 <= extra_end) {
      const uint64_t id = Le(f, x, 2), len = Le(f, x + 2, 2);
      if (x + 4 + len > extra_end) break;
      if (id == 1) {
        uint64_t v = x + 4;
        for (uint64_t* field : {&m.size, &m.packed, &m.header}) {
          if (*field == 0xffffffff && v + 8 <= x + 4 + len) {
            *field = Le(f, v, 8);
            v += 8;
          }
        }
      }
      x += 4 + len;
    }
    if (flags & 1) {
      throw DataError(path + ": member " + m.name + " is encrypted");
    }
    members.push_back(m);
    at = extra_end + comment_len;
  }
  return members;
}

// One member's bytes as they are read: stored ones straight from the
// file, deflated ones inflated a piece at a time; its CRC-32 and size are
// checked when its last byte is read. A deflated member's size is what
// the directory claims, not known until inflated: remaining() is -1, so
// the .npy reader checks the array's size against memory, not the claim.
class MemberSource : public ByteSource {
 public:
  MemberSource(const ArchiveFile& file, const Member& m, uint64_t data_at)
      : file_(file),
        member_(m),
        name_(file.path() + "[" + m.name + "]"),
        next_in_(data_at),
        end_in_(data_at + m.packed) {
    if (m.method == 8) {
      if (inflateInit2(&z_, -15) != Z_OK) {
        throw DataError(name_ + ": zlib could not start decompressing");
      }
      inflating_ = true;
    }
  }
  ~MemberSource() override {
    if (inflating_) inflateEnd(&z_);
  }

  size_t Read(void* out, size_t size) override {
    auto* dst = static_cast<uint8_t*>(out);
    const size_t n =
        member_.method == 0 ? ReadStored(dst, size) : ReadDeflated(dst, size);
    crc_ = crc32_z(crc_, dst, n);
    produced_ += n;
    if (produced_ > member_.size) {
      throw DataError(name_ + ": its data is longer than the " +
                      std::to_string(member_.size) +
                      " bytes the archive's directory says");
    }
    if (ended_ && !checked_) CheckEnd();
    return n;
  }

  // After a failed read: reads on to the end and says whether the bytes
  // are not the ones the archive's CRC-32 describes.
  bool DamagedWhenReadToTheEnd() {
    try {
      DrainRemaining(member_.size);
    } catch (const DataError&) {
      return true;
    }
    return checked_ && crc_ != member_.crc;
  }

  int64_t remaining() const override {
    return member_.method == 0 ? static_cast<int64_t>(member_.size - produced_)
                               : -1;
  }
  const std::string& path() const override { return name_; }

 private:
  size_t ReadStored(uint8_t* dst, size_t size) {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(size, member_.size - produced_));
    file_.ReadAt(next_in_, dst, n);
    next_in_ += n;
    ended_ = produced_ + n == member_.size;
    return n;
  }

  size_t ReadDeflated(uint8_t* dst, size_t size) {
    size_t written = 0;
    while (written < size && !ended_) {
      if (z_.avail_in == 0 && next_in_ < end_in_) {
        const size_t n = static_cast<size_t>(
            std::min<uint64_t>(input_.size(), end_in_ - next_in_));
        file_.ReadAt(next_in_, input_.data(), n);
        next_in_ += n;
        z_.next_in = input_.data();
        z_.avail_in = static_cast<uInt>(n);
      }
      const size_t slice = std::min<size_t>(size - written, 1u << 30);
      z_.next_out = dst + written;
      z_.avail_out = static_cast<uInt>(slice);
      const int rc = inflate(&z_, Z_NO_FLUSH);
      written += slice - z_.avail_out;
      if (rc == Z_STREAM_END) {
        ended_ = true;
      } else if (rc == Z_BUF_ERROR && z_.avail_in == 0 && next_in_ == end_in_) {
        throw DataError(name_ +
                        ": its deflated data ends early; the "
                        "archive is cut short or corrupt");
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        throw DataError(
            name_ + ": its deflated data is corrupt (zlib: " +
            (z_.msg != nullptr ? z_.msg : "error " + std::to_string(rc)) + ")");
      }
    }
    return written;
  }

  void CheckEnd() {
    checked_ = true;
    if (produced_ != member_.size) {
      throw DataError(name_ + ": its data is not the " +
                      std::to_string(member_.size) +
                      " bytes the archive's directory says");
    }
    if (crc_ != member_.crc) throw DataError(name_ + ": CRC-32 mismatch");
  }

  const ArchiveFile& file_;
  const Member member_;
  const std::string name_;
  uint64_t next_in_, end_in_;
  z_stream z_{};
  bool inflating_ = false;
  std::vector<uint8_t> input_ = std::vector<uint8_t>(256 * 1024);
  uint64_t produced_ = 0;
  uLong crc_ = crc32_z(0, nullptr, 0);
  bool ended_ = false;
  bool checked_ = false;
};

}  // namespace

std::map<std::string, Array> ReadNpz(const std::string& path,
                                     uint64_t max_bytes) {
  const ArchiveFile file(path);
  std::map<std::string, Array> out;
  uint64_t total = 0;
  for (const Member& m : CentralDirectory(file)) {
    const std::string where = path + ": member " + m.name;
    if (m.name.size() < 4 || m.name.compare(m.name.size() - 4, 4, ".npy")) {
      throw DataError(where + " is not an .npy array");
    }
    if (m.method != 0 && m.method != 8) {
      throw DataError(where + " uses compression method " +
                      std::to_string(m.method) +
                      " (stored and deflated are read)");
    }
    if (m.method == 0 && m.packed != m.size) {
      throw DataError(where + ": its sizes disagree");
    }
    if (m.size > max_bytes - std::min(max_bytes, total)) {
      throw DataError(where + ": " + std::to_string(m.size) +
                      " bytes pass the " + std::to_string(max_bytes) +
                      "-byte limit");
    }
    total += m.size;
    CheckRange(file, m.header, 30, "member " + m.name + "'s header");
    const std::string local = file.ReadString(m.header, 30);
    if (local.compare(0, 4, "PK\x03\x04") != 0) {
      throw DataError(where + ": its local header is corrupt");
    }
    const uint64_t data_at =
        m.header + 30 + Le(local, 26, 2) + Le(local, 28, 2);
    CheckRange(file, data_at, m.packed, "member " + m.name + "'s data");
    // ReadNpy reads the member to its end: its size and CRC-32 are
    // checked there.
    MemberSource source(file, m, data_at);
    try {
      out[m.name.substr(0, m.name.size() - 4)] = ReadNpy(source, max_bytes);
    } catch (const DataError&) {
      // A member that does not parse may be a damaged one: where it is
      // small enough to read on, its CRC-32 names that cause instead.
      if (m.size <= (uint64_t{64} << 20) && source.DamagedWhenReadToTheEnd()) {
        throw DataError(where + ": CRC-32 mismatch (the member is damaged)");
      }
      throw;
    }
  }
  return out;
}

std::string NpzBytes(const std::map<std::string, Array>& arrays) {
  std::string out, directory;
  for (const auto& [name, array] : arrays) {
    const std::string file = name + ".npy";
    const std::string npy = NpyBytes(array);
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(npy.data()),
              static_cast<uInt>(npy.size())));
    const uint64_t header = out.size();
    out += "PK\x03\x04";
    PutLe(&out, 20, 2);  // Version needed.
    PutLe(&out, 0, 2);   // Flags.
    PutLe(&out, 0, 2);   // Stored.
    PutLe(&out, 0, 4);   // Time and date.
    PutLe(&out, crc, 4);
    PutLe(&out, npy.size(), 4);
    PutLe(&out, npy.size(), 4);
    PutLe(&out, file.size(), 2);
    PutLe(&out, 0, 2);
    out += file + npy;
    directory += "PK\x01\x02";
    PutLe(&directory, 20, 2);
    PutLe(&directory, 20, 2);
    PutLe(&directory, 0, 2);
    PutLe(&directory, 0, 2);
    PutLe(&directory, 0, 4);
    PutLe(&directory, crc, 4);
    PutLe(&directory, npy.size(), 4);
    PutLe(&directory, npy.size(), 4);
    PutLe(&directory, file.size(), 2);
    PutLe(&directory, 0, 2);
    PutLe(&directory, 0, 2);
    PutLe(&directory, 0, 2);
    PutLe(&directory, 0, 2);
    PutLe(&directory, 0, 4);
    PutLe(&directory, header, 4);
    directory += file;
  }
  const uint64_t cd_at = out.size();
  out += directory;
  out += "PK\x05\x06";
  PutLe(&out, 0, 4);
  PutLe(&out, arrays.size(), 2);
  PutLe(&out, arrays.size(), 2);
  PutLe(&out, directory.size(), 4);
  PutLe(&out, cd_at, 4);
  PutLe(&out, 0, 2);
  return out;
}

}  // namespace ringlet::data
