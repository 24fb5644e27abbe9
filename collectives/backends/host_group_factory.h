// Communicators for ranks that are threads of one process, with buffers in
// host memory: made together, like ncclCommInitAll.
#ifndef RINGLET_COLLECTIVES_BACKENDS_HOST_GROUP_FACTORY_H_
#define RINGLET_COLLECTIVES_BACKENDS_HOST_GROUP_FACTORY_H_

#include <memory>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/backends/transport_communicator.h"

namespace ringlet::collectives {

// One communicator per rank, rank i at index i; hand each to its own thread.
// Throws std::invalid_argument when size < 1 or algorithms is empty.
std::vector<std::unique_ptr<Communicator>> CreateHostGroup(
    int size, const AlgorithmList& algorithms, const CommOptions& options);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_HOST_GROUP_FACTORY_H_
