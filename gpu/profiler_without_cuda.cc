// Builds without CUDA: there is no profiler to tell.
#include "gpu/profiler.h"

namespace ringlet::gpu {

void StartProfiling() {}
void StopProfiling() {}

}  // namespace ringlet::gpu
