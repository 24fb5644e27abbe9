// //collectives:nccl — NVIDIA's NCCL behind the Communicator interface, one
// rank per GPU of this process (ncclCommInitAll).
//
// Buffers are device pointers on the rank's GPU. Calls are enqueued on the
// rank's own stream, as NCCL does, and waited for before they return, so the
// Communicator contract (buffers free on return) holds; the stream is the
// communicator's, so other work on other streams overlaps.
#ifndef RINGLET_COLLECTIVES_NCCL_H_
#define RINGLET_COLLECTIVES_NCCL_H_

#include <memory>
#include <vector>

#include "collectives/collective_error.h"
#include "collectives/communicator.h"

namespace ringlet::collectives {

// False in builds without CUDA and NCCL; CreateNcclGroup then throws.
bool NcclCompiledIn();

// Ranks 0..size-1 on GPUs 0..size-1. Throws CollectiveError saying what is
// missing when there are fewer usable GPUs than ranks or no NCCL.
std::vector<std::unique_ptr<Communicator>> CreateNcclGroup(
    int size, const CommOptions& options = {});

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_NCCL_H_
