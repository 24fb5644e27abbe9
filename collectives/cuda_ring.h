// //collectives:cuda_ring — the same ring (and naive) algorithms over GPU
// buffers: rank i is GPU i of this process, chunks move with peer copies
// and are combined by a kernel on the rank's stream (transport/cuda).
//
// Builds only where CUDA is found. Compiled in CI; no GPU was available to
// run it.
#ifndef RINGLET_COLLECTIVES_CUDA_RING_H_
#define RINGLET_COLLECTIVES_CUDA_RING_H_

#include <memory>
#include <vector>

#include "collectives/collective_error.h"
#include "collectives/communicator.h"

namespace ringlet::collectives {

// One communicator per GPU 0..size-1; buffers are device pointers on the
// rank's GPU. Each communicator runs "ring" by default and "naive" when a
// call asks for it. Throws CollectiveError when there are fewer than `size`
// usable GPUs, saying how many there are.
std::vector<std::unique_ptr<Communicator>> CreateCudaRingGroup(
    int size, const CommOptions& options = {});

// How many GPUs the CUDA runtime reports (0 without a driver or device).
int CudaDeviceCount();

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_CUDA_RING_H_
