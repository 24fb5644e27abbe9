// The one piece a canary adds (each canary links one implementation).
#ifndef RINGLET_GPU_CANARIES_CANARY_PIECE_H_
#define RINGLET_GPU_CANARIES_CANARY_PIECE_H_

namespace ringlet::gpu::canaries {

// Uses the piece; false when it failed.
bool PieceWorks();

}  // namespace ringlet::gpu::canaries

#endif  // RINGLET_GPU_CANARIES_CANARY_PIECE_H_
