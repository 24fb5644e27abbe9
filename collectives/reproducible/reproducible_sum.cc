#include "collectives/reproducible/reproducible_sum.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ringlet::collectives {
namespace {

// Bits of the grid below the block's largest magnitude: 53 (float64's
// significand) less the 20 of headroom that kMaxReproducibleSummands needs.
constexpr int kGridBits = 33;
static_assert(kMaxReproducibleSummands == int64_t{1} << (53 - kGridBits));

// Adding and subtracting 1.5 * 2^52 rounds a double below 2^51 in magnitude
// to an integer, to nearest even (the default rounding mode; ringlet never
// builds with -ffast-math, which would fold it away). Infinities and NaNs
// pass through unchanged.
constexpr double kRoundToInteger = 6755399441055744.0;
constexpr int32_t kQuietNaNBits = 0x7fc00000;

float Bf16ToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

// `value` rounded once, to nearest even, to bfloat16 (8 significant bits,
// float32's exponent range, subnormals included): through the nearest
// float, then to nearest even on its bits, except where the first rounding
// made a tie that `value` is not (it lies to one side of it).
uint16_t DoubleToBf16(double value) {
  const float narrow = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &narrow, sizeof bits);
  if ((bits & 0x7fffffff) > 0x7f800000) return 0x7fc0;  // NaN.
  if ((bits & 0xffff) == 0x8000 && static_cast<double>(narrow) != value) {
    const bool away = std::fabs(value) > std::fabs(static_cast<double>(narrow));
    return static_cast<uint16_t>((bits >> 16) + (away ? 1 : 0));
  }
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

// Reads summand element i as a float.
template <DataType kType>
float Load(const void* data, size_t i) {
  if constexpr (kType == DataType::kFloat32) {
    return static_cast<const float*>(data)[i];
  } else {
    return Bf16ToFloat(static_cast<const uint16_t*>(data)[i]);
  }
}

// A float's magnitude as bits (a non-negative int32) orders like the
// magnitude itself, and int32 maxima vectorise where float ones (NaN's
// rules) and GCC's unsigned ones do not.
constexpr int32_t kMagnitude = 0x7fffffff, kInfinity = 0x7f800000;

template <DataType kType>
int32_t MagnitudeBits(const void* data, size_t i) {
  if constexpr (kType == DataType::kFloat32) {
    int32_t bits;
    std::memcpy(&bits, static_cast<const float*>(data) + i, sizeof bits);
    return bits & kMagnitude;
  } else {
    return (static_cast<int32_t>(static_cast<const uint16_t*>(data)[i]) << 16) &
           kMagnitude;
  }
}

template <DataType kType>
void LocalBlockMaxima(const std::vector<const void*>& summands, size_t count,
                      float* maxima) {
  for (const void* summand : summands) {
    for (size_t b = 0; b * kReproducibleBlock < count; ++b) {
      const size_t end = std::min(count, (b + 1) * kReproducibleBlock);
      int32_t m;
      std::memcpy(&m, &maxima[b], sizeof m);
      for (size_t i = b * kReproducibleBlock; i < end; ++i) {
        const int32_t magnitude = MagnitudeBits<kType>(summand, i);
        // Infinities and NaNs stay out of the grid.
        m = std::max(m, magnitude < kInfinity ? magnitude : 0);
      }
      std::memcpy(&maxima[b], &m, sizeof m);
    }
  }
}

// The grid of a block whose largest finite magnitude is m: summands are
// held as counts of 2^q (scale = 2^-q) and turned back by unit = 2^q.
struct Grid {
  double scale = 1;
  double unit = 1;
};

Grid GridFor(float m) {
  if (!(m > 0)) return {};  // Only zeros (and non-finite values) here.
  int exponent;
  std::frexp(m, &exponent);  // m < 2^exponent.
  const int q = exponent - kGridBits;
  return {std::ldexp(1.0, -q), std::ldexp(1.0, q)};
}

// sums = the summands on their blocks' grids, added (exactly). With none,
// zeros.
template <DataType kType>
void AddOnGrid(const std::vector<const void*>& summands, size_t count,
               const float* maxima, double* sums) {
  for (size_t b = 0; b * kReproducibleBlock < count; ++b) {
    const Grid grid = GridFor(maxima[b]);
    const size_t begin = b * kReproducibleBlock;
    const size_t end = std::min(count, begin + kReproducibleBlock);
    if (summands.empty()) std::fill(sums + begin, sums + end, 0.0);
    for (size_t s = 0; s < summands.size(); ++s) {
      const void* summand = summands[s];
      const bool first = s == 0;
      for (size_t i = begin; i < end; ++i) {
        const double scaled =
            static_cast<double>(Load<kType>(summand, i)) * grid.scale;
        const double rounded = (scaled + kRoundToInteger) - kRoundToInteger;
        sums[i] = first ? rounded : sums[i] + rounded;
      }
    }
  }
}

template <DataType kType>
void Store(const double* sums, size_t count, const float* maxima, void* recv) {
  for (size_t b = 0; b * kReproducibleBlock < count; ++b) {
    const Grid grid = GridFor(maxima[b]);
    const size_t begin = b * kReproducibleBlock;
    const size_t end = std::min(count, begin + kReproducibleBlock);
    // sums[i] * unit is exact (a power of two times an integer below 2^53):
    // the one rounding is into the output type.
    if constexpr (kType == DataType::kFloat32) {
      float* out = static_cast<float*>(recv);
      // NaNs of any sign and payload (they depend on the order of the
      // additions) leave as one quiet NaN.
      for (size_t i = begin; i < end; ++i) {
        const float narrow = static_cast<float>(sums[i] * grid.unit);
        int32_t bits;
        std::memcpy(&bits, &narrow, sizeof bits);
        bits = (bits & kMagnitude) > kInfinity ? kQuietNaNBits : bits;
        std::memcpy(&out[i], &bits, sizeof bits);
      }
    } else {
      uint16_t* out = static_cast<uint16_t*>(recv);
      for (size_t i = begin; i < end; ++i) {
        out[i] = DoubleToBf16(sums[i] * grid.unit);
      }
    }
  }
}

template <DataType kType>
void Run(Communicator& comm, const std::vector<const void*>& summands,
         void* recv, size_t count, const CallOptions& options) {
  const size_t blocks = (count + kReproducibleBlock - 1) / kReproducibleBlock;
  // [0]: this rank's number of summands (the job's largest after the MAX),
  // then each block's largest finite magnitude.
  std::vector<float> maxima(blocks + 1, 0.0f);
  maxima[0] = static_cast<float>(summands.size());
  LocalBlockMaxima<kType>(summands, count, maxima.data() + 1);
  comm.AllReduce(maxima.data(), maxima.data(), maxima.size(),
                 DataType::kFloat32, ReduceOp::kMax, options);
  const double most = static_cast<double>(maxima[0]) * comm.size();
  if (most > static_cast<double>(kMaxReproducibleSummands)) {
    throw std::invalid_argument(
        "reproducible allreduce: up to " +
        std::to_string(static_cast<int64_t>(maxima[0])) +
        " summands on each of " + std::to_string(comm.size()) +
        " ranks may exceed the " + std::to_string(kMaxReproducibleSummands) +
        " the grid holds exactly; add some up in fewer calls");
  }
  // Kept per thread between calls: a fresh buffer of this size would cost
  // its page faults on every call.
  thread_local std::vector<double> sums;
  if (sums.size() < count) {
    sums = std::vector<double>();
    sums.resize(count);
  }
  AddOnGrid<kType>(summands, count, maxima.data() + 1, sums.data());
  comm.AllReduce(sums.data(), sums.data(), count, DataType::kFloat64,
                 ReduceOp::kSum, options);
  Store<kType>(sums.data(), count, maxima.data() + 1, recv);
}

}  // namespace

void ReproducibleAllReduce(Communicator& comm,
                           const std::vector<const void*>& summands, void* recv,
                           size_t count, DataType type,
                           const CallOptions& options) {
  if (type != DataType::kFloat32 && type != DataType::kBFloat16) {
    throw std::invalid_argument(
        std::string("reproducible allreduce: takes float32 or bfloat16, not ") +
        Name(type));
  }
  if (count == 0) return;
  if (recv == nullptr) {
    throw std::invalid_argument("reproducible allreduce: recv is null");
  }
  for (const void* summand : summands) {
    if (summand == nullptr) {
      throw std::invalid_argument("reproducible allreduce: a summand is null");
    }
  }
  if (type == DataType::kFloat32) {
    Run<DataType::kFloat32>(comm, summands, recv, count, options);
  } else {
    Run<DataType::kBFloat16>(comm, summands, recv, count, options);
  }
}

}  // namespace ringlet::collectives
