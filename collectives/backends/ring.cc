#include "collectives/backends/ring.h"

#include "collectives/algorithms/ring_algorithm.h"
#include "collectives/backends/host_group_factory.h"

namespace ringlet::collectives {

std::vector<std::unique_ptr<Communicator>> CreateRingGroup(
    int size, const CommOptions& options) {
  return CreateHostGroup(size, {std::make_shared<RingAlgorithm>()}, options);
}

}  // namespace ringlet::collectives
