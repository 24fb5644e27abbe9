// A fast 64-bit checksum of bytes, for fingerprints (data, builds) and for
// checkpoint files: FNV-1a over 64-bit words, then a final mix. Not
// cryptographic: it catches corruption and accidental differences.
#ifndef RINGLET_TRAINERS_COMMON_CHECKPOINTS_CHECKSUM_H_
#define RINGLET_TRAINERS_COMMON_CHECKPOINTS_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace ringlet::trainers {

inline constexpr uint64_t kChecksumStart = 0xcbf29ce484222325ull;

// The checksum of data[0, bytes), continuing from `start` (chain calls to
// cover several buffers).
uint64_t Checksum64(const void* data, size_t bytes,
                    uint64_t start = kChecksumStart);

// Checksum64 of bytes given in pieces: Finish() is Checksum64 of the
// pieces' concatenation, from the same start (a data set's fingerprint
// without holding it whole).
class Checksum64Stream {
 public:
  explicit Checksum64Stream(uint64_t start = kChecksumStart) : h_(start) {}
  void Update(const void* data, size_t bytes);
  uint64_t Finish() const;

 private:
  uint64_t h_;
  unsigned char pending_[8] = {};
  size_t pending_bytes_ = 0;
  uint64_t total_ = 0;
};

// "0123456789abcdef".
std::string HexChecksum(uint64_t value);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_CHECKPOINTS_CHECKSUM_H_
