// CreateNcclGroup for builds without CUDA or NCCL.
#include "collectives/backends/gpu_list.h"
#include "collectives/backends/nccl.h"

namespace ringlet::collectives {

bool NcclCompiledIn() { return false; }

namespace {

[[noreturn]] void ThrowNotBuilt() {
  throw CollectiveError(
      "the nccl backend is not in this build (no CUDA toolkit with NCCL was "
      "found, or --config=cpu_only); use ring or naive, or rebuild where "
      "CUDA and NCCL are installed");
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> CreateNcclGroup(
    int size, const CommOptions& options) {
  (void)size;
  (void)options;
  ThrowNotBuilt();
}

std::vector<std::unique_ptr<Communicator>> CreateNcclGroup(
    const std::vector<int>& gpus, const CommOptions& options) {
  (void)options;
  CheckGpuList("nccl", gpus, /*one_rank_per_gpu=*/true);
  ThrowNotBuilt();
}

std::vector<std::unique_ptr<Communicator>> CreateNcclRanks(
    const NcclProcessLayout& layout, const NcclIdBroadcast& broadcast_id,
    const CommOptions& options) {
  (void)layout;
  (void)broadcast_id;
  (void)options;
  ThrowNotBuilt();
}

}  // namespace ringlet::collectives
