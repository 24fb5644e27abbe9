// No piece: cudart alone, as the clean programs of the bisection.
#include "gpu/canaries/canary_piece.h"

namespace ringlet::gpu::canaries {

bool PieceWorks() { return true; }

}  // namespace ringlet::gpu::canaries
