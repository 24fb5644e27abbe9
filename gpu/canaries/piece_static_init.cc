// A static initializer that calls cudart before main.
#include <cuda_runtime.h>

#include "gpu/canaries/canary_piece.h"

namespace ringlet::gpu::canaries {
namespace {

const int gpus_at_start = [] {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : -1;
}();

}  // namespace

bool PieceWorks() { return gpus_at_start > 0; }

}  // namespace ringlet::gpu::canaries
