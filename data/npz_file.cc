#include "data/npz_file.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "data/byte_source.h"
#include "data/data_error.h"
#include "data/npy_file.h"

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

// The archive's bytes [at, at + n) exist, or a DataError naming `what`.
void CheckRange(const std::string& file, const std::string& path, uint64_t at,
                uint64_t n, const std::string& what) {
  if (at > file.size() || n > file.size() - at) {
    throw DataError(path + ": " + what + " lies past the end of the file; " +
                    "the archive is cut short or corrupt");
  }
}

std::vector<Member> CentralDirectory(const std::string& f,
                                     const std::string& path) {
  // The end-of-central-directory record: the last "PK\5\6" in the final
  // 22 + 65535 bytes (its comment may run up to 65535).
  const uint64_t lowest = f.size() > 22 + 65535 ? f.size() - 22 - 65535 : 0;
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(f.size()) - 22;
       i >= static_cast<int64_t>(lowest); --i) {
    if (f.compare(i, 4, "PK\x05\x06") == 0) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) {
    throw DataError(path +
                    ": not an .npz (zip) file: no end of central "
                    "directory record");
  }
  uint64_t entries = Le(f, eocd + 10, 2), cd_size = Le(f, eocd + 12, 4),
           cd_at = Le(f, eocd + 16, 4);
  if (entries == 0xffff || cd_size == 0xffffffff || cd_at == 0xffffffff) {
    // ZIP64: its locator sits just before, pointing at its own record.
    if (eocd < 20 || f.compare(eocd - 20, 4, "PK\x06\x07") != 0) {
      throw DataError(path + ": a ZIP64 archive without its locator");
    }
    const uint64_t record = Le(f, eocd - 20 + 8, 8);
    CheckRange(f, path, record, 56, "the ZIP64 directory record");
    if (f.compare(record, 4, "PK\x06\x06") != 0) {
      throw DataError(path + ": the ZIP64 directory record is missing");
    }
    entries = Le(f, record + 32, 8);
    cd_size = Le(f, record + 40, 8);
    cd_at = Le(f, record + 48, 8);
  }
  CheckRange(f, path, cd_at, cd_size, "the central directory");
  std::vector<Member> members;
  uint64_t at = cd_at;
  for (uint64_t e = 0; e < entries; ++e) {
    CheckRange(f, path, at, 46, "a central directory entry");
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
    CheckRange(f, path, at + 46, name_len + extra_len + comment_len,
               "a member's name");
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

}  // namespace

std::map<std::string, Array> ReadNpz(const std::string& path,
                                     uint64_t max_bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) throw DataError(path + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    throw DataError(path + ": " + std::to_string(st.st_size) +
                    " bytes, more than the " + std::to_string(max_bytes) +
                    "-byte limit");
  }
  std::ifstream in(path, std::ios::binary);
  const std::string f((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) throw DataError(path + ": cannot read");
  std::map<std::string, Array> out;
  uint64_t total = 0;
  for (const Member& m : CentralDirectory(f, path)) {
    const std::string where = path + ": member " + m.name;
    if (m.name.size() < 4 || m.name.compare(m.name.size() - 4, 4, ".npy")) {
      throw DataError(where + " is not an .npy array");
    }
    if (m.method != 0 && m.method != 8) {
      throw DataError(where + " uses compression method " +
                      std::to_string(m.method) +
                      " (stored and deflated are read)");
    }
    if (m.size > max_bytes - std::min(max_bytes, total)) {
      throw DataError(where + ": " + std::to_string(m.size) +
                      " bytes pass the " + std::to_string(max_bytes) +
                      "-byte limit");
    }
    total += m.size;
    CheckRange(f, path, m.header, 30, "member " + m.name + "'s header");
    if (f.compare(m.header, 4, "PK\x03\x04") != 0) {
      throw DataError(where + ": its local header is corrupt");
    }
    const uint64_t data_at =
        m.header + 30 + Le(f, m.header + 26, 2) + Le(f, m.header + 28, 2);
    CheckRange(f, path, data_at, m.packed, "member " + m.name + "'s data");
    std::string bytes;
    if (m.method == 0) {
      if (m.packed != m.size) throw DataError(where + ": its sizes disagree");
      bytes = f.substr(data_at, m.size);
    } else {
      bytes.resize(m.size);
      z_stream z{};
      if (inflateInit2(&z, -15) != Z_OK) throw DataError(where + ": zlib");
      z.next_in =
          reinterpret_cast<Bytef*>(const_cast<char*>(f.data() + data_at));
      z.avail_in = static_cast<uInt>(std::min<uint64_t>(m.packed, UINT32_MAX));
      z.next_out = reinterpret_cast<Bytef*>(bytes.data());
      z.avail_out = static_cast<uInt>(std::min<uint64_t>(m.size, UINT32_MAX));
      const int rc = inflate(&z, Z_FINISH);
      const uint64_t produced = z.total_out;
      inflateEnd(&z);
      if (rc != Z_STREAM_END || produced != m.size) {
        throw DataError(where + ": its deflated data is corrupt or not " +
                        std::to_string(m.size) + " bytes");
      }
    }
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(bytes.data()),
              static_cast<uInt>(bytes.size())));
    if (crc != m.crc) throw DataError(where + ": CRC-32 mismatch");
    const std::string name = m.name.substr(0, m.name.size() - 4);
    auto source = BytesInMemory(std::move(bytes), path + "[" + m.name + "]");
    out[name] = ReadNpy(*source, max_bytes);
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
