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

uint64_t BenchHostBytesPerRank(uint64_t max_bytes, size_t element_size,
                               bool on_device, bool reproducible) {
  long double bytes = max_bytes;  // The host copy.
  if (!on_device) bytes += 2.0L * max_bytes;
  // On GPUs the words live in GPU memory.
  if (reproducible && !on_device) bytes += 8.0L * (max_bytes / element_size);
  return bytes >= 18e18L ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

void CheckBenchMemory(const std::string& max_bytes_flag, uint64_t per_rank,
                      int ranks, const std::string& shortfall) {
  if (shortfall.empty()) return;
  const long double need = static_cast<long double>(per_rank) * ranks;
  char text[160];
  std::snprintf(text, sizeof(text),
                "--max_bytes=%s needs %.1f GiB for %d rank%s on this host: ",
                max_bytes_flag.c_str(), static_cast<double>(need / (1 << 30)),
                ranks, ranks == 1 ? "" : "s");
  throw std::invalid_argument(text + shortfall + "; lower --max_bytes or " +
                              (ranks > 1 ? "--ranks" : "use a larger host"));
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

int CallsPerRow(uint64_t bytes, int iters, double seconds_per_call) {
  const uint64_t for_volume =
      (uint64_t{1} << 30) / std::max<uint64_t>(bytes, 1);
  uint64_t calls = std::min<uint64_t>(for_volume, 100000);
  if (seconds_per_call > 0) {
    const double fit = kRowSecondsBudget / seconds_per_call;
    if (fit < static_cast<double>(calls)) calls = static_cast<uint64_t>(fit);
  }
  return static_cast<int>(std::max<uint64_t>(iters, calls));
}

double AllReduceBusFactor(int ranks) { return 2.0 * (ranks - 1) / ranks; }

}  // namespace ringlet::collectives
