// Reading gzip-compressed files whole, through zlib.
#ifndef RINGLET_DATA_GZIP_FILE_H_
#define RINGLET_DATA_GZIP_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringlet::data {

// Streams the decompressed bytes of one gzip file (one or more members) in
// pieces: the caller asks for exactly the bytes it expects, so it can check a
// header before it allocates room for the body.
class GzipReader {
 public:
  // Reads the compressed file into memory. Throws DataError when the file is
  // missing, unreadable or does not start with the gzip magic bytes.
  explicit GzipReader(const std::string& path);
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Fills out[0, size) with the next decompressed bytes and returns how many
  // it wrote: fewer than size only at the end of the data. Throws DataError
  // on a corrupt or truncated stream.
  size_t Read(void* out, size_t size);

  // Reads and discards whatever is left; returns how many bytes that was.
  uint64_t DrainRemaining();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<uint8_t> compressed_;
  struct Stream;
  Stream* stream_;  // zlib's state; a pointer keeps zlib.h out of this header.
  bool finished_ = false;
};

}  // namespace ringlet::data

#endif  // RINGLET_DATA_GZIP_FILE_H_
