// The cuda_ring backend's entry point in every build: the list checked
// here, the group made by the registered factory, or an error that says
// the CUDA transport is not in this build.
#include "collectives/backends/cuda_ring.h"

#include "collectives/backends/gpu_list.h"
#include "gpu/registration.h"

namespace ringlet::collectives {
namespace {

gpu::Registration<CudaRingFactory> registered;

}  // namespace

void RegisterCudaRingFactory(CudaRingFactory factory) {
  registered.Set(factory);
}

bool CudaRingCompiledIn() { return registered.Get() != nullptr; }

std::vector<std::unique_ptr<Communicator>> CreateCudaRingGroup(
    const std::vector<int>& gpus, const std::string& first_algorithm,
    const CommOptions& options) {
  CheckGpuList(first_algorithm + " (CUDA)", gpus, /*one_rank_per_gpu=*/false);
  const CudaRingFactory factory = registered.Get();
  if (factory == nullptr) {
    throw CollectiveError(
        "the CUDA transport is not in this build (no CUDA toolkit was found, "
        "or --config=cpu_only): " +
        GpuListName(gpus) +
        " cannot be used; use CPU devices, or rebuild where CUDA is "
        "installed");
  }
  return factory(gpus, first_algorithm, options);
}

}  // namespace ringlet::collectives
