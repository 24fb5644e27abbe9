// Without registered hooks (a build without CUDA) there is no profiler to
// tell, and both calls do nothing.
#include "gpu/profiler.h"

#include "gpu/registration.h"

namespace ringlet::gpu {
namespace {

Registration<const ProfilerHooks*> registered;

}  // namespace

void RegisterProfilerHooks(const ProfilerHooks* hooks) {
  registered.Set(hooks);
}

void StartProfiling() {
  if (const ProfilerHooks* hooks = registered.Get()) hooks->start();
}

void StopProfiling() {
  if (const ProfilerHooks* hooks = registered.Get()) hooks->stop();
}

}  // namespace ringlet::gpu
