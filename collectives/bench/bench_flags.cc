#include "collectives/bench/bench_flags.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

namespace ringlet::collectives {

uint64_t ParseBytes(const std::string& text) {
  size_t end = 0;
  uint64_t value = 0;
  try {
    value = std::stoull(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  if (end == 0 || text[0] == '-') {
    throw std::invalid_argument("'" + text +
                                "' is not a size; use e.g. 4, 64K, 1M, 2G");
  }
  const std::string suffix = text.substr(end);
  uint64_t scale = 1;
  if (suffix == "K" || suffix == "k") {
    scale = uint64_t{1} << 10;
  } else if (suffix == "M" || suffix == "m") {
    scale = uint64_t{1} << 20;
  } else if (suffix == "G" || suffix == "g") {
    scale = uint64_t{1} << 30;
  } else if (!suffix.empty()) {
    throw std::invalid_argument("'" + text +
                                "': unknown size suffix; use K, M or G");
  }
  // 17179869184G once wrapped around to 0.
  if (value > UINT64_MAX / scale) {
    throw std::invalid_argument("'" + text +
                                "' is more bytes than 64 bits can count");
  }
  return value * scale;
}

void CheckBenchMemory(uint64_t max_bytes, int ranks, uint64_t memory_bytes) {
  // A send and a receive buffer per rank, at the largest size.
  const long double need = 2.0L * ranks * max_bytes;
  if (need <= 0.8L * memory_bytes) return;
  char text[200];
  std::snprintf(text, sizeof(text),
                "--max_bytes=%llu needs %.1f GiB for %d ranks (a send and a "
                "receive buffer each), more than 80%% of this machine's "
                "%.1f GiB; lower --max_bytes or --ranks",
                static_cast<unsigned long long>(max_bytes),
                static_cast<double>(need / (1 << 30)), ranks,
                static_cast<double>(memory_bytes) / (1 << 30));
  throw std::invalid_argument(text);
}

uint64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page : 0;
}

std::vector<uint64_t> SweepSizes(uint64_t min_bytes, uint64_t max_bytes,
                                 double factor, size_t element_size) {
  if (factor <= 1.0 && min_bytes != max_bytes) {
    throw std::invalid_argument("--factor must be above 1");
  }
  std::vector<uint64_t> sizes;
  for (double b = static_cast<double>(min_bytes);
       b <= static_cast<double>(max_bytes) * (1 + 1e-9); b *= factor) {
    uint64_t bytes = static_cast<uint64_t>(b) / element_size * element_size;
    bytes = std::max<uint64_t>(bytes, element_size);
    if (sizes.empty() || sizes.back() != bytes) sizes.push_back(bytes);
    if (min_bytes == max_bytes) break;
  }
  return sizes;
}

int CallsPerRow(uint64_t bytes, int iters) {
  const uint64_t for_volume =
      (uint64_t{1} << 30) / std::max<uint64_t>(bytes, 1);
  return static_cast<int>(
      std::max<uint64_t>(iters, std::min<uint64_t>(for_volume, 100000)));
}

double AllReduceBusFactor(int ranks) { return 2.0 * (ranks - 1) / ranks; }

}  // namespace ringlet::collectives
