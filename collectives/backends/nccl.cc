// The nccl backend's entry points in every build: arguments checked here,
// the calls made by the registered library, or an error that says the
// backend is not in this build.
#include "collectives/backends/nccl.h"

#include <stdexcept>
#include <string>

#include "collectives/backends/gpu_list.h"
#include "gpu/registration.h"

namespace ringlet::collectives {
namespace {

gpu::Registration<const NcclLibrary*> registered;

const NcclLibrary& Library() {
  const NcclLibrary* library = registered.Get();
  if (library == nullptr) {
    throw CollectiveError(
        "the nccl backend is not in this build (no CUDA toolkit with NCCL "
        "was found, or --config=cpu_only); use ring or naive, or rebuild "
        "where CUDA and NCCL are installed");
  }
  return *library;
}

}  // namespace

void RegisterNcclLibrary(const NcclLibrary* library) {
  registered.Set(library);
}

bool NcclCompiledIn() { return registered.Get() != nullptr; }

std::vector<std::unique_ptr<Communicator>> CreateNcclGroup(
    int size, const CommOptions& options) {
  if (size < 1) {
    throw std::invalid_argument("a group needs at least 1 rank, got " +
                                std::to_string(size));
  }
  std::vector<int> gpus(size);
  for (int i = 0; i < size; ++i) gpus[i] = i;
  return CreateNcclGroup(gpus, options);
}

std::vector<std::unique_ptr<Communicator>> CreateNcclGroup(
    const std::vector<int>& gpus, const CommOptions& options) {
  CheckGpuList("nccl", gpus, /*one_rank_per_gpu=*/true);
  return Library().create_group(gpus, options);
}

std::vector<std::unique_ptr<Communicator>> CreateNcclRanks(
    const NcclProcessLayout& layout, const NcclIdBroadcast& broadcast_id,
    const CommOptions& options) {
  return Library().create_ranks(layout, broadcast_id, options);
}

}  // namespace ringlet::collectives
