// //collectives:collectives — every backend behind one call, by name.
#ifndef RINGLET_COLLECTIVES_COLLECTIVES_H_
#define RINGLET_COLLECTIVES_COLLECTIVES_H_

#include <memory>
#include <string>
#include <vector>

#include "collectives/collective_error.h"
#include "collectives/communicator.h"

namespace ringlet::collectives {

// The backends this build has: "ring", "naive", and "nccl" where CUDA is.
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

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_COLLECTIVES_H_
