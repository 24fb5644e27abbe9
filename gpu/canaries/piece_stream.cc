// //gpu:stream (DeviceGuard, Stream, Event), g++-compiled and calling
// cudart, as gpu/cuda_test links it.
#include "gpu/canaries/canary_piece.h"
#include "gpu/stream.h"

namespace ringlet::gpu::canaries {

bool PieceWorks() {
  Stream stream(0);
  Event event(0);
  event.Record(stream.get());
  stream.Synchronize();
  return true;
}

}  // namespace ringlet::gpu::canaries
