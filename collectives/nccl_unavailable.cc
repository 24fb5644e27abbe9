// CreateNcclGroup for builds without CUDA or NCCL.
#include "collectives/nccl.h"

namespace ringlet::collectives {

bool NcclCompiledIn() { return false; }

std::vector<std::unique_ptr<Communicator>> CreateNcclGroup(
    int size, const CommOptions& options) {
  (void)size;
  (void)options;
  throw CollectiveError(
      "the nccl backend is not in this build (no CUDA toolkit with NCCL was "
      "found, or --config=cpu_only); use ring or naive, or rebuild where "
      "CUDA and NCCL are installed");
}

}  // namespace ringlet::collectives
