// //collectives/backends:nccl — NVIDIA's NCCL behind the Communicator
// interface, one rank per GPU: all in this process (ncclCommInitAll), or spread
// over the processes of a job (ncclCommInitRank, the id handed round by the
// caller).
//
// Buffers are device pointers on the rank's GPU. Calls are enqueued on the
// rank's own stream, as NCCL does, and waited for before they return, so the
// Communicator contract (buffers free on return) holds; the stream is the
// communicator's, so other work on other streams overlaps.
//
// The functions below exist in every build; the library behind them is
// registered by the CUDA build (nccl.cu, linked whole). Without it they
// check their arguments and say the backend is not in this build.
#ifndef RINGLET_COLLECTIVES_BACKENDS_NCCL_H_
#define RINGLET_COLLECTIVES_BACKENDS_NCCL_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/api/communicator.h"

namespace ringlet::collectives {

// False in builds without CUDA and NCCL; CreateNcclGroup then throws.
bool NcclCompiledIn();

// Ranks 0..size-1 on GPUs 0..size-1. Throws CollectiveError saying what is
// missing when there are fewer usable GPUs than ranks or no NCCL.
std::vector<std::unique_ptr<Communicator>> CreateNcclGroup(
    int size, const CommOptions& options = {});

// Rank i on GPU gpus[i] (`cuda:1,3` is {1, 3}). NCCL allows one rank per
// GPU: a GPU listed twice is a CollectiveError naming both ranks and the
// backends that allow it (ring, naive). Throws as above otherwise.
std::vector<std::unique_ptr<Communicator>> CreateNcclGroup(
    const std::vector<int>& gpus, const CommOptions& options = {});

// This process's part of a job over processes (ncclCommInitRank): global
// ranks first_rank .. first_rank + gpus.size() - 1 of `size`, local rank i
// on GPU gpus[i] of this host.
struct NcclProcessLayout {
  int size = 1;
  int first_rank = 0;
  std::vector<int> gpus = {0};
};
// Copies `bytes` at `id` from the process holding rank 0 to every process
// (MPI_Bcast under mpirun); collective over the job's processes.
using NcclIdBroadcast = std::function<void(void* id, size_t bytes)>;

// Every process calls it at once. Throws CollectiveError as CreateNcclGroup.
std::vector<std::unique_ptr<Communicator>> CreateNcclRanks(
    const NcclProcessLayout& layout, const NcclIdBroadcast& broadcast_id,
    const CommOptions& options = {});

// What the CUDA build registers: groups of a checked GPU list, and a
// process's ranks of a job.
struct NcclLibrary {
  std::vector<std::unique_ptr<Communicator>> (*create_group)(
      const std::vector<int>& gpus, const CommOptions& options);
  std::vector<std::unique_ptr<Communicator>> (*create_ranks)(
      const NcclProcessLayout& layout, const NcclIdBroadcast& broadcast_id,
      const CommOptions& options);
};
// Called once, by nccl.cu's static initialiser; `library` must outlive the
// program.
void RegisterNcclLibrary(const NcclLibrary* library);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_NCCL_H_
