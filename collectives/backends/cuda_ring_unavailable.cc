// CreateCudaRingGroup for builds without CUDA: the list is still checked,
// so a bad one gets the same error as in a CUDA build.
#include "collectives/backends/cuda_ring.h"
#include "collectives/backends/gpu_list.h"

namespace ringlet::collectives {

bool CudaRingCompiledIn() { return false; }

std::vector<std::unique_ptr<Communicator>> CreateCudaRingGroup(
    const std::vector<int>& gpus, const std::string& first_algorithm,
    const CommOptions& options) {
  (void)options;
  CheckGpuList(first_algorithm + " (CUDA)", gpus, /*one_rank_per_gpu=*/false);
  throw CollectiveError(
      "the CUDA transport is not in this build (no CUDA toolkit was found, "
      "or --config=cpu_only): " +
      GpuListName(gpus) +
      " cannot be used; use CPU devices, or rebuild where CUDA is installed");
}

}  // namespace ringlet::collectives
