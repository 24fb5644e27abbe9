// //collectives/backends:cuda_ring — the same ring (and naive) algorithms over
// GPU buffers: rank i runs on GPU gpus[i] of this process with its own stream;
// chunks move with peer copies and are combined by a kernel on the rank's
// stream (transport/cuda). Several ranks may share one GPU (each has its
// own stream and buffers), so every multi-GPU path runs on a single GPU.
//
// The functions exist in every build; the groups are made by a factory the
// CUDA build registers (cuda_ring_cuda.cc, linked whole). Without it they
// check the list and throw CollectiveError.
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

// What the CUDA build registers: groups of a checked GPU list.
using CudaRingFactory = std::vector<std::unique_ptr<Communicator>> (*)(
    const std::vector<int>& gpus, const std::string& first_algorithm,
    const CommOptions& options);
// Called once, by cuda_ring_cuda.cc's static initialiser.
void RegisterCudaRingFactory(CudaRingFactory factory);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_CUDA_RING_H_
