// The CUDA runtime's profiler switches, registered when linked in.
#include <cuda_profiler_api.h>

#include "gpu/profiler.h"

namespace ringlet::gpu {
namespace {

// Errors ignored on purpose: a program without a GPU or a profiler runs on.
void Start() { (void)cudaProfilerStart(); }
void Stop() { (void)cudaProfilerStop(); }

const ProfilerHooks kCudaProfiler{&Start, &Stop};
[[maybe_unused]] const bool kRegistered =
    (RegisterProfilerHooks(&kCudaProfiler), true);

}  // namespace
}  // namespace ringlet::gpu
