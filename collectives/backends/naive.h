// //collectives/backends:naive — the textbook reduce-to-rank-0-then-broadcast
// between threads of one process; the baseline for every benchmark.
#ifndef RINGLET_COLLECTIVES_BACKENDS_NAIVE_H_
#define RINGLET_COLLECTIVES_BACKENDS_NAIVE_H_

#include <memory>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/api/communicator.h"

namespace ringlet::collectives {

std::vector<std::unique_ptr<Communicator>> CreateNaiveGroup(
    int size, const CommOptions& options = {});

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_NAIVE_H_
