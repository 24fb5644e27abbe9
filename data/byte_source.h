// A file's bytes in order, as a reader asks for them: a plain file, or a
// gzip-compressed one (GzipReader), told apart by the first two bytes. A
// reader checks a header before it allocates room for the body: a plain
// file says how many bytes are left; a compressed one is read up to a
// limit.
#ifndef RINGLET_DATA_BYTE_SOURCE_H_
#define RINGLET_DATA_BYTE_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ringlet::data {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills out[0, size) with the next bytes and returns how many it wrote:
  // fewer than size only at the end. Throws DataError when reading fails.
  virtual size_t Read(void* out, size_t size) = 0;
  // Reads and discards what is left, up to `limit` bytes; returns how many
  // bytes that was (limit + 1 when more were left). By default through
  // Read, a piece at a time.
  virtual uint64_t DrainRemaining(uint64_t limit);
  // The bytes not yet read, where known without reading them (plain
  // files); else -1.
  virtual int64_t remaining() const = 0;
  virtual const std::string& path() const = 0;
};

// Opens `path`: gzip-compressed when it starts with 1f 8b, else plain.
// Throws DataError when it is missing, unreadable or not a regular file.
std::unique_ptr<ByteSource> OpenBytes(const std::string& path);

// `bytes` as a source named `name` (a member of an archive, say).
std::unique_ptr<ByteSource> BytesInMemory(std::string bytes, std::string name);

// Reads exactly `size` bytes; else throws DataError naming the file and
// `what` ("npy header").
void ReadExactly(ByteSource& source, void* out, size_t size, const char* what);

// Reads the `total` bytes a header promised (`described`: "float32 [60000,
// 784]"), after checking they fit in the host's memory: else DataError
// naming the file, the size and what is free. Where the source does not
// know its size (compressed data) the buffer grows as the bytes arrive, so
// a header that promises more than the data holds costs no memory before
// the data runs out. Throws DataError for fewer bytes than promised.
std::vector<uint8_t> ReadBody(ByteSource& source, uint64_t total,
                              const std::string& described);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_BYTE_SOURCE_H_
