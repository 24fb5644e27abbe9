// Marks the part of a program a profiler should record: with
// `ncu --profile-from-start off` (or nsys --capture-range=cudaProfilerApi)
// only the kernels between StartProfiling and StopProfiling are measured,
// e.g. train_bench's timed steps without cuDNN's algorithm search before
// them. No-ops without CUDA or without a profiler attached: the CUDA
// build registers the runtime's switches (profiler_cuda.cc, linked whole).
#ifndef RINGLET_GPU_PROFILER_H_
#define RINGLET_GPU_PROFILER_H_

namespace ringlet::gpu {

void StartProfiling();
void StopProfiling();

// What a GPU library does at the two calls above.
struct ProfilerHooks {
  void (*start)();
  void (*stop)();
};
// Called once, by the CUDA build's static initialiser; `hooks` must outlive
// the program.
void RegisterProfilerHooks(const ProfilerHooks* hooks);

}  // namespace ringlet::gpu

#endif  // RINGLET_GPU_PROFILER_H_
