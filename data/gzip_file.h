// Reading gzip-compressed files through zlib, streaming: the compressed
// file is read in pieces as the caller asks for bytes, so memory stays
// small whatever the file's size (a 30 GB file once ended in bad_alloc).
#ifndef RINGLET_DATA_GZIP_FILE_H_
#define RINGLET_DATA_GZIP_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/byte_source.h"

namespace ringlet::data {

// Streams the decompressed bytes of one gzip file (one or more members) in
// pieces: the caller asks for exactly the bytes it expects, so it can check a
// header before it allocates room for the body.
class GzipReader : public ByteSource {
 public:
  // Opens the file. Throws DataError when it is missing, not a regular file,
  // unreadable or does not start with the gzip magic bytes.
  explicit GzipReader(const std::string& path);
  ~GzipReader() override;
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Fills out[0, size) with the next decompressed bytes and returns how many
  // it wrote: fewer than size only at the end of the data. Throws DataError
  // on a corrupt or truncated stream, or bytes after the last gzip member.
  size_t Read(void* out, size_t size) override;

  // Unknown without decompressing: -1.
  int64_t remaining() const override { return -1; }

  const std::string& path() const override { return path_; }

 private:
  // Tops the input up to at least `want` unread bytes (fewer at the end of
  // the file); returns the unread bytes now held.
  size_t Refill(size_t want);

  std::string path_;
  int fd_ = -1;
  uint64_t file_bytes_ = 0;
  uint64_t file_read_ = 0;  // Compressed bytes read from the file so far.
  std::vector<uint8_t> input_;
  struct Stream;
  Stream* stream_;  // zlib's state; a pointer keeps zlib.h out of this header.
  bool finished_ = false;
};

}  // namespace ringlet::data

#endif  // RINGLET_DATA_GZIP_FILE_H_
