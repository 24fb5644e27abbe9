// A trivial function in a shared object of ringlet's (no CUDA in it): what
// matters is the file's name (see BUILD).
#include "gpu/canaries/canary_piece.h"

namespace ringlet::gpu::canaries {

bool PieceWorks() { return true; }

}  // namespace ringlet::gpu::canaries
