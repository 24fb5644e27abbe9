// //collectives — every backend behind one call, by name.
#ifndef RINGLET_COLLECTIVES_COLLECTIVES_H_
#define RINGLET_COLLECTIVES_COLLECTIVES_H_

#include <memory>
#include <string>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/api/communicator.h"
#include "collectives/api/rank_device.h"

namespace ringlet::collectives {

// The backends this build runs in one process, by name (each registers
// itself: backends/registry.h): naive, ring, and nccl where CUDA and NCCL
// are.
std::vector<std::string> AvailableBackends();

// One communicator per rank of a new in-process group, rank i at index i.
//   ring, naive  ranks are threads, buffers in host memory; each
//                communicator also runs the other algorithm when a call
//                asks for it (CallOptions::algorithm).
//   nccl         rank i is GPU i, buffers in its memory.
// Throws std::invalid_argument for an unknown backend or a bad size, and
// CollectiveError when the backend cannot run here (e.g. too few GPUs).
std::vector<std::unique_ptr<Communicator>> CreateGroup(
    const std::string& backend, int size, const CommOptions& options = {});

// One communicator per entry of `devices`, rank i on devices[i]:
//   every rank on the host  as CreateGroup(backend, devices.size())
//   every rank on a GPU     ring, naive: the hand-written algorithms over
//                           the CUDA transport; a GPU may repeat (several
//                           ranks on one GPU, each with its own stream).
//                           nccl: one rank per GPU; a repeat is refused
//                           with an error naming the ranks.
// GPUs are named by index, so {Gpu(1), Gpu(3)} is legal. Throws
// std::invalid_argument for an empty list, a mix of host and GPU ranks or
// an unknown backend; CollectiveError when the backend cannot run here (a
// GPU that does not exist, no CUDA in this build).
std::vector<std::unique_ptr<Communicator>> CreateGroup(
    const std::string& backend, const std::vector<RankDevice>& devices,
    const CommOptions& options = {});

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_COLLECTIVES_H_
