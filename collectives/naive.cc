#include "collectives/naive.h"

#include "collectives/host_group_factory.h"
#include "collectives/naive_algorithm.h"

namespace ringlet::collectives {

std::vector<std::unique_ptr<Communicator>> CreateNaiveGroup(
    int size, const CommOptions& options) {
  return CreateHostGroup(size, {std::make_shared<NaiveAlgorithm>()}, options);
}

}  // namespace ringlet::collectives
