#include "collectives/backends/gpu_list.h"

#include <stdexcept>

#include "collectives/api/collective_error.h"

namespace ringlet::collectives {

std::string GpuListName(const std::vector<int>& gpus) {
  std::string out = "[";
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (i > 0) out += ", ";
    out += "cuda:" + std::to_string(gpus[i]);
  }
  return out + "]";
}

void CheckGpuList(const std::string& backend, const std::vector<int>& gpus,
                  bool one_rank_per_gpu) {
  if (gpus.empty()) {
    throw std::invalid_argument("the " + backend +
                                " backend was given no GPU; a group needs at "
                                "least 1 rank");
  }
  for (size_t r = 0; r < gpus.size(); ++r) {
    if (gpus[r] < 0) {
      throw std::invalid_argument(
          "the " + backend + " backend: rank " + std::to_string(r) +
          " is on cuda:" + std::to_string(gpus[r]) + ", which cannot exist");
    }
  }
  if (!one_rank_per_gpu) return;
  for (size_t r = 0; r < gpus.size(); ++r) {
    for (size_t s = r + 1; s < gpus.size(); ++s) {
      if (gpus[r] != gpus[s]) continue;
      throw CollectiveError(
          "the " + backend +
          " backend cannot put two ranks on one GPU: "
          "ranks " +
          std::to_string(r) + " and " + std::to_string(s) + " of " +
          GpuListName(gpus) + " are both on cuda:" + std::to_string(gpus[r]) +
          "; use --backend=ring or --backend=naive, which can, or give each "
          "rank its own GPU");
    }
  }
}

void CheckGpusExist(const std::string& backend, const std::vector<int>& gpus,
                    int available, const std::string& reason) {
  for (size_t r = 0; r < gpus.size(); ++r) {
    if (gpus[r] < available) continue;
    throw CollectiveError(
        "the " + backend + " backend: rank " + std::to_string(r) +
        " is on cuda:" + std::to_string(gpus[r]) + ", but this machine has " +
        std::to_string(available) + " GPU(s)" +
        (reason.empty() ? "" : " (" + reason + ")") +
        "; list GPUs that exist, or use the host backends on CPU devices");
  }
}

}  // namespace ringlet::collectives
