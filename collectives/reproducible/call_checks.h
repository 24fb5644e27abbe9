// The reproducible sum's argument checks, shared by the host and the GPU
// versions so both refuse alike.
#ifndef RINGLET_COLLECTIVES_REPRODUCIBLE_CALL_CHECKS_H_
#define RINGLET_COLLECTIVES_REPRODUCIBLE_CALL_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/api/types.h"

namespace ringlet::collectives {

// Throws std::invalid_argument for a type other than float32 or bfloat16,
// and, for count > 0, a null recv or summand, or more summands than an
// int32 counts.
void CheckReproducibleCall(const std::vector<const void*>& summands,
                           const void* recv, size_t count, DataType type);

// Throws std::invalid_argument when `most` summands on each of `ranks`
// ranks may be more than kMaxReproducibleSummands (the grid's headroom).
void CheckSummandsFit(int32_t most, int ranks);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_REPRODUCIBLE_CALL_CHECKS_H_
