#include "collectives/backends/naive.h"

#include "collectives/algorithms/naive_algorithm.h"
#include "collectives/backends/host_group_factory.h"

namespace ringlet::collectives {

std::vector<std::unique_ptr<Communicator>> CreateNaiveGroup(
    int size, const CommOptions& options) {
  return CreateHostGroup(size, {std::make_shared<NaiveAlgorithm>()}, options);
}

}  // namespace ringlet::collectives
