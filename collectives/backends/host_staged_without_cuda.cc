// CudaStaging for builds without CUDA: a clear error.
#include <string>

#include "collectives/api/collective_error.h"
#include "collectives/backends/host_staged.h"

namespace ringlet::collectives {

StagingCopies CudaStaging(int gpu) {
  throw CollectiveError(
      "cuda:" + std::to_string(gpu) +
      " cannot take part in a collective: this build has no CUDA (no CUDA "
      "toolkit was found, or --config=cpu_only); use CPU devices, or rebuild "
      "where CUDA is installed");
}

}  // namespace ringlet::collectives
