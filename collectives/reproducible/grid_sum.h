// The reproducible sum's words on the CPU (grid_arithmetic.h), as a
// WireReduction a ring runs (api/wire_reduction.h) and as plain passes over
// host buffers for backends that cannot.
#ifndef RINGLET_COLLECTIVES_REPRODUCIBLE_GRID_SUM_H_
#define RINGLET_COLLECTIVES_REPRODUCIBLE_GRID_SUM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/api/types.h"
#include "collectives/api/wire_reduction.h"
#include "collectives/reproducible/grid_arithmetic.h"

namespace ringlet::collectives::grid {

// Elements per block of the common grid (a constant of the format: every
// rank and every run must use the same).
inline constexpr size_t kBlock = 256;

// maxima[b] = max(maxima[b], the largest finite magnitude's bits in block
// b of x[0, count)), for each block. type: kFloat32 or kBFloat16.
void AddBlockMaxima(DataType type, const void* x, size_t count,
                    int32_t* maxima);

// The sum of every rank's summands (this rank's: `summands`, host buffers
// of `type`) into `out`, in float64 words. The grids are given, one per
// block of the call, or null: then Combine finds each block's grid from
// the values it sees, which is right only where a first message and this
// rank's one summand are all the job's summands (two ranks, values first).
// Summands and grids must outlive it.
class GridSum final : public WireReduction {
 public:
  GridSum(DataType type, const std::vector<const void*>& summands, void* out,
          const Grid* grids, bool values_first);

  DataType type() const override { return type_; }
  size_t wire_bytes() const override { return sizeof(double); }
  size_t grain() const override { return kBlock; }
  const void* values() const override {
    return values_first_ ? summands_[0] : nullptr;
  }
  void* out() const override { return out_; }
  void Encode(size_t offset, size_t count, void* words) const override;
  void Combine(size_t offset, size_t count, const void* message,
               bool message_is_values, void* words, bool finish) const override;
  void Finish(size_t offset, size_t count, const void* words) const override;

 private:
  const DataType type_;
  const std::vector<const void*>& summands_;
  void* const out_;
  const Grid* const grids_;
  const bool values_first_;
};

}  // namespace ringlet::collectives::grid

#endif  // RINGLET_COLLECTIVES_REPRODUCIBLE_GRID_SUM_H_
