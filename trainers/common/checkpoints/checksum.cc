#include "trainers/common/checkpoints/checksum.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ringlet::trainers {

uint64_t Checksum64(const void* data, size_t bytes, uint64_t start) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = start;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * 0x100000001b3ull;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, bytes - i);
  // The length goes in too: zeros appended change the sum.
  h = (h ^ tail ^ bytes) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

void Checksum64Stream::Update(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += bytes;
  while (bytes > 0) {
    const size_t n = std::min(bytes, 8 - pending_bytes_);
    std::memcpy(pending_ + pending_bytes_, p, n);
    pending_bytes_ += n;
    p += n;
    bytes -= n;
    if (pending_bytes_ == 8) {
      uint64_t word;
      std::memcpy(&word, pending_, 8);
      h_ = (h_ ^ word) * 0x100000001b3ull;
      pending_bytes_ = 0;
    }
  }
}

uint64_t Checksum64Stream::Finish() const {
  uint64_t tail = 0;
  std::memcpy(&tail, pending_, pending_bytes_);
  // As Checksum64: the length goes in with the tail.
  uint64_t h = (h_ ^ tail ^ total_) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

std::string HexChecksum(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace ringlet::trainers
