#include "trainers/common/checksum.h"

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

std::string HexChecksum(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace ringlet::trainers
