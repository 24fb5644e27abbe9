// Marks the part of a program a profiler should record: with
// `ncu --profile-from-start off` (or nsys --capture-range=cudaProfilerApi)
// only the kernels between StartProfiling and StopProfiling are measured,
// e.g. train_bench's timed steps without cuDNN's algorithm search before
// them. No-ops without CUDA or without a profiler attached.
#ifndef RINGLET_GPU_PROFILER_H_
#define RINGLET_GPU_PROFILER_H_

namespace ringlet::gpu {

void StartProfiling();
void StopProfiling();

}  // namespace ringlet::gpu

#endif  // RINGLET_GPU_PROFILER_H_
