// //collectives/backends:cuda_ring — the same ring (and naive) algorithms over
// GPU buffers: rank i runs on GPU gpus[i] of this process with its own stream;
// chunks move with peer copies and are combined by a kernel on the rank's
// stream (transport/cuda). Several ranks may share one GPU (each has its
// own stream and buffers), so every multi-GPU path runs on a single GPU.
//
// In builds without CUDA the functions exist and throw CollectiveError.
#ifndef RINGLET_COLLECTIVES_BACKENDS_CUDA_RING_H_
#define RINGLET_COLLECTIVES_BACKENDS_CUDA_RING_H_

#include <memory>
#include <string>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/api/communicator.h"

namespace ringlet::collectives {

// False in builds without CUDA; CreateCudaRingGroup then throws.
bool CudaRingCompiledIn();

// One communicator per entry of `gpus` (rank i on GPU gpus[i]; an index may
// repeat); buffers are device pointers on the rank's GPU. Each communicator
// runs `first_algorithm` ("ring" or "naive") by default and the other when
// a call asks for it. Throws std::invalid_argument for an empty list or an
// unknown algorithm, and CollectiveError naming the GPU when one does not
// exist or CUDA fails.
std::vector<std::unique_ptr<Communicator>> CreateCudaRingGroup(
    const std::vector<int>& gpus, const std::string& first_algorithm = "ring",
    const CommOptions& options = {});

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_CUDA_RING_H_
