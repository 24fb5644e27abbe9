#include "collectives/reproducible/grid_sum.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ringlet::collectives::grid {
namespace {

template <DataType kType>
float Load(const void* x, size_t i) {
  if constexpr (kType == DataType::kFloat32) {
    return static_cast<const float*>(x)[i];
  } else {
    return BFloat16Value(static_cast<const uint16_t*>(x)[i]);
  }
}

template <DataType kType>
const void* At(const void* base, size_t i) {
  return static_cast<const char*>(base) + i * SizeOf(kType);
}
template <DataType kType>
void* At(void* base, size_t i) {
  return static_cast<char*>(base) + i * SizeOf(kType);
}

// The loops below run over one block's run of n <= kBlock elements (one
// grid): short loops GCC vectorises at -O3.

template <DataType kType>
int32_t RunMaximum(const void* x, size_t n, int32_t m) {
  for (size_t i = 0; i < n; ++i) {
    m = std::max(m, FiniteMagnitudeBits(Load<kType>(x, i)));
  }
  return m;
}

// words = x on the grid.
template <DataType kType>
void ToWords(const void* x, size_t n, double scale, double* words) {
  for (size_t i = 0; i < n; ++i) words[i] = ToWord(Load<kType>(x, i), scale);
}

// words = base + x on the grid (base may be words).
template <DataType kType>
void AddWords(const void* x, size_t n, double scale, const double* base,
              double* words) {
  for (size_t i = 0; i < n; ++i) {
    words[i] = base[i] + ToWord(Load<kType>(x, i), scale);
  }
}

template <DataType kType>
void FinishOne(double word, double unit, void* out, size_t i) {
  if constexpr (kType == DataType::kFloat32) {
    const uint32_t bits = FinishFloat32(word, unit);
    std::memcpy(static_cast<float*>(out) + i, &bits, sizeof bits);
  } else {
    static_cast<uint16_t*>(out)[i] = FinishBFloat16(word, unit);
  }
}

template <DataType kType>
void Narrow(const double* words, size_t n, double unit, void* out) {
  for (size_t i = 0; i < n; ++i) FinishOne<kType>(words[i], unit, out, i);
}

// out = a + b on the grid, finished: the steps above in one loop.
template <DataType kType>
void FinishPair(const void* a, const void* b, size_t n, const Grid& grid,
                void* out) {
  for (size_t i = 0; i < n; ++i) {
    const double word = ToWord(Load<kType>(a, i), grid.scale) +
                        ToWord(Load<kType>(b, i), grid.scale);
    FinishOne<kType>(word, grid.unit, out, i);
  }
}

// Two ranks' bfloat16 values of one block (the grid found from them):
// their largest finite magnitude, as float32 bits, and whether every finite
// value is a multiple of the grid's unit. Then rounding onto the grid moves
// nothing, the words' sum is the exact a + b, and float32 gets its
// bfloat16 rounding right: a + b is exact in float32 unless the exponents
// differ by 16 or more, and then a + b lies within 2^-15 of a's magnitude,
// nowhere near a bfloat16 midpoint, before and after float32's rounding.
struct BFloat16Pair {
  int32_t largest = 0;
  bool on_grid = false;
};

BFloat16Pair ScanBFloat16Pair(const void* a, const void* b, size_t n) {
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  // Magnitudes' bits; the least biased exponent of a finite non-zero value
  // (a subnormal's spacing is a normal's of exponent 1).
  int32_t largest = 0, least = 255;
  const auto scan = [&](int32_t v) {
    const bool finite = v < 0x7f80;
    largest = std::max(largest, finite ? v : 0);
    const int32_t exponent = std::max(v >> 7, 1);
    least = std::min(least, finite && v != 0 ? exponent : 255);
  };
  for (size_t i = 0; i < n; ++i) scan(x[i] & 0x7fff);
  for (size_t i = 0; i < n; ++i) scan(y[i] & 0x7fff);
  // A value of biased exponent E has spacing 2^(E - 134); the grid's unit
  // is 2^(E_m - 159) for the largest's E_m: multiples where E >= E_m - 25.
  return {largest << 16, least >= (largest >> 7) - 25};
}

// out = a + b in float32, rounded to bfloat16 to nearest even; any NaN as
// 0x7fc0; -0 + -0 as +0, as the words have it (+ 0.0f: a sum of zero
// becomes +0, any other is unchanged).
void FinishBFloat16PairInFloat(const void* a, const void* b, size_t n,
                               void* out) {
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  uint16_t* o = static_cast<uint16_t*>(out);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits =
        BitCast<uint32_t>(BFloat16Value(x[i]) + BFloat16Value(y[i]) + 0.0f);
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    bits += 0x7fffu + ((bits >> 16) & 1u);
    o[i] = nan ? uint16_t{0x7fc0} : static_cast<uint16_t>(bits >> 16);
  }
}

// What a range's kernels need.
struct Job {
  const std::vector<const void*>* summands;
  void* out;
  const Grid* grids;  // Null: from the values (see GridSum).
  size_t offset;
  size_t count;
};

// f(at, n, grid) for each block's run of the job's range.
template <typename F>
void ForBlocks(const Job& job, F&& f) {
  const size_t end = job.offset + job.count;
  for (size_t at = job.offset; at < end;) {
    const size_t b = at / kBlock;
    const size_t stop = std::min(end, (b + 1) * kBlock);
    f(at, stop - at, job.grids != nullptr ? job.grids[b] : Grid{});
    at = stop;
  }
}

// words = base + this rank's summands at [at, at + n) on `grid` (base
// null: nothing; it may be words).
template <DataType kType>
void Local(const std::vector<const void*>& summands, size_t at, size_t n,
           const Grid& grid, const double* base, double* words) {
  size_t s = 0;
  if (summands.empty()) {
    if (base == nullptr) std::fill(words, words + n, 0.0);
    if (base != nullptr && base != words) std::copy(base, base + n, words);
    return;
  }
  if (base == nullptr) {
    ToWords<kType>(At<kType>(summands[s++], at), n, grid.scale, words);
  } else if (base != words) {
    AddWords<kType>(At<kType>(summands[s++], at), n, grid.scale, base, words);
  }
  for (; s < summands.size(); ++s) {
    AddWords<kType>(At<kType>(summands[s], at), n, grid.scale, words, words);
  }
}

template <DataType kType>
void EncodeRange(const Job& job, double* words) {
  ForBlocks(job, [&](size_t at, size_t n, const Grid& grid) {
    Local<kType>(*job.summands, at, n, grid, nullptr,
                 words + (at - job.offset));
  });
}

template <DataType kType>
void CombineRange(const Job& job, const void* message, bool message_is_values,
                  double* words, bool finish) {
  const std::vector<const void*>& summands = *job.summands;
  ForBlocks(job, [&](size_t at, size_t n, Grid grid) {
    const size_t from = at - job.offset;
    const void* theirs = At<kType>(message, from);
    // Finished values go through a block of stack, so out may be one of
    // the summands (every summand is read before out is written).
    alignas(64) char finished[kBlock * sizeof(float)];
    if (job.grids == nullptr) {
      const void* mine = At<kType>(summands[0], at);
      if constexpr (kType == DataType::kBFloat16) {
        const BFloat16Pair pair = ScanBFloat16Pair(theirs, mine, n);
        if (pair.on_grid) {
          FinishBFloat16PairInFloat(theirs, mine, n, finished);
          std::memcpy(At<kType>(job.out, at), finished, n * SizeOf(kType));
          return;
        }
        grid = GridFor(pair.largest);
      } else {
        grid = GridFor(
            RunMaximum<kType>(theirs, n, RunMaximum<kType>(mine, n, 0)));
      }
    }
    if (finish && message_is_values && summands.size() == 1) {
      FinishPair<kType>(theirs, At<kType>(summands[0], at), n, grid, finished);
      std::memcpy(At<kType>(job.out, at), finished, n * SizeOf(kType));
      return;
    }
    double block[kBlock];
    double* sum = finish ? block : words + from;
    if (message_is_values) {
      ToWords<kType>(theirs, n, grid.scale, sum);
      Local<kType>(summands, at, n, grid, sum, sum);
    } else {
      Local<kType>(summands, at, n, grid,
                   static_cast<const double*>(message) + from, sum);
    }
    if (finish) Narrow<kType>(sum, n, grid.unit, At<kType>(job.out, at));
  });
}

template <DataType kType>
void FinishRange(const Job& job, const double* words) {
  ForBlocks(job, [&](size_t at, size_t n, const Grid& grid) {
    Narrow<kType>(words + (at - job.offset), n, grid.unit,
                  At<kType>(job.out, at));
  });
}

template <DataType kType>
void MaximaRange(const void* x, size_t count, int32_t* maxima) {
  for (size_t b = 0; b * kBlock < count; ++b) {
    const size_t at = b * kBlock;
    maxima[b] = RunMaximum<kType>(At<kType>(x, at),
                                  std::min(kBlock, count - at), maxima[b]);
  }
}

// Each kernel twice where the compiler can: for AVX-512 (twice the float64
// lanes and registers, which the finishing steps need) and for the build's
// baseline, chosen when the program loads by what the CPU has. Flattened:
// everything a kernel calls is compiled into each copy.
// Not under ThreadSanitizer: the loader runs the choosing function before
// the sanitizer's runtime is up, and the program dies there.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__)
#define RINGLET_GRID_CLONES \
  __attribute__((flatten, target_clones("arch=x86-64-v4", "default")))
#else
#define RINGLET_GRID_CLONES
#endif

RINGLET_GRID_CLONES void EncodeRangeFloat32(const Job& job, double* words) {
  EncodeRange<DataType::kFloat32>(job, words);
}
RINGLET_GRID_CLONES void EncodeRangeBFloat16(const Job& job, double* words) {
  EncodeRange<DataType::kBFloat16>(job, words);
}
RINGLET_GRID_CLONES void CombineRangeFloat32(const Job& job,
                                             const void* message, bool values,
                                             double* words, bool finish) {
  CombineRange<DataType::kFloat32>(job, message, values, words, finish);
}
RINGLET_GRID_CLONES void CombineRangeBFloat16(const Job& job,
                                              const void* message, bool values,
                                              double* words, bool finish) {
  CombineRange<DataType::kBFloat16>(job, message, values, words, finish);
}
RINGLET_GRID_CLONES void FinishRangeFloat32(const Job& job,
                                            const double* words) {
  FinishRange<DataType::kFloat32>(job, words);
}
RINGLET_GRID_CLONES void FinishRangeBFloat16(const Job& job,
                                             const double* words) {
  FinishRange<DataType::kBFloat16>(job, words);
}
RINGLET_GRID_CLONES void MaximaFloat32(const void* x, size_t count,
                                       int32_t* maxima) {
  MaximaRange<DataType::kFloat32>(x, count, maxima);
}
RINGLET_GRID_CLONES void MaximaBFloat16(const void* x, size_t count,
                                        int32_t* maxima) {
  MaximaRange<DataType::kBFloat16>(x, count, maxima);
}

void RequireHostType(DataType type) {
  if (type != DataType::kFloat32 && type != DataType::kBFloat16) {
    throw std::invalid_argument(
        std::string("reproducible sum: takes float32 or bfloat16, not ") +
        Name(type));
  }
}

}  // namespace

void AddBlockMaxima(DataType type, const void* x, size_t count,
                    int32_t* maxima) {
  RequireHostType(type);
  if (type == DataType::kFloat32) {
    MaximaFloat32(x, count, maxima);
  } else {
    MaximaBFloat16(x, count, maxima);
  }
}

GridSum::GridSum(DataType type, const std::vector<const void*>& summands,
                 void* out, const Grid* grids, bool values_first)
    : type_(type),
      summands_(summands),
      out_(out),
      grids_(grids),
      values_first_(values_first) {
  RequireHostType(type);
}

void GridSum::Encode(size_t offset, size_t count, void* words) const {
  if (grids_ == nullptr) {
    throw std::logic_error("reproducible sum: Encode needs the grids");
  }
  const Job job{&summands_, out_, grids_, offset, count};
  double* w = static_cast<double*>(words);
  if (type_ == DataType::kFloat32) {
    EncodeRangeFloat32(job, w);
  } else {
    EncodeRangeBFloat16(job, w);
  }
}

void GridSum::Combine(size_t offset, size_t count, const void* message,
                      bool message_is_values, void* words, bool finish) const {
  if (grids_ == nullptr &&
      (!message_is_values || !finish || summands_.size() != 1)) {
    throw std::logic_error(
        "reproducible sum: grids from values need the whole job's values in "
        "one combination");
  }
  const Job job{&summands_, out_, grids_, offset, count};
  double* w = static_cast<double*>(words);
  if (type_ == DataType::kFloat32) {
    CombineRangeFloat32(job, message, message_is_values, w, finish);
  } else {
    CombineRangeBFloat16(job, message, message_is_values, w, finish);
  }
}

void GridSum::Finish(size_t offset, size_t count, const void* words) const {
  if (grids_ == nullptr) {
    throw std::logic_error("reproducible sum: Finish needs the grids");
  }
  const Job job{&summands_, out_, grids_, offset, count};
  const double* w = static_cast<const double*>(words);
  if (type_ == DataType::kFloat32) {
    FinishRangeFloat32(job, w);
  } else {
    FinishRangeBFloat16(job, w);
  }
}

}  // namespace ringlet::collectives::grid
