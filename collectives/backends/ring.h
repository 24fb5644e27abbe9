// //collectives/backends:ring — the hand-written ring allreduce between threads
// of one process. Depends on nothing of ringlet outside collectives/.
//
//   auto comms = ringlet::collectives::CreateRingGroup(4);
//   // thread i: comms[i]->AllReduce(grad, grad, n, DataType::kFloat32,
//   //                               ReduceOp::kSum);
#ifndef RINGLET_COLLECTIVES_BACKENDS_RING_H_
#define RINGLET_COLLECTIVES_BACKENDS_RING_H_

#include <memory>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/api/communicator.h"

namespace ringlet::collectives {

std::vector<std::unique_ptr<Communicator>> CreateRingGroup(
    int size, const CommOptions& options = {});

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_RING_H_
