#include "collectives/ring.h"

#include "collectives/host_group_factory.h"
#include "collectives/ring_algorithm.h"

namespace ringlet::collectives {

std::vector<std::unique_ptr<Communicator>> CreateRingGroup(
    int size, const CommOptions& options) {
  return CreateHostGroup(size, {std::make_shared<RingAlgorithm>()}, options);
}

}  // namespace ringlet::collectives
