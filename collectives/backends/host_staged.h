// GPU buffers over a communicator that moves host memory: each call copies
// the rank's device data into a host buffer, runs the host communicator on
// it, and copies the result back. How the ring, naive and mpi backends
// reach GPUs across the processes of an mpirun job without a CUDA-aware
// MPI (NCCL, where it can run, moves device memory itself).
//
// The copies are synchronous: the call reads its device buffers when it is
// made (the caller has finished writing them, as for every Communicator)
// and they hold the result when it returns.
#ifndef RINGLET_COLLECTIVES_BACKENDS_HOST_STAGED_H_
#define RINGLET_COLLECTIVES_BACKENDS_HOST_STAGED_H_

#include <cstddef>
#include <functional>
#include <memory>

#include "collectives/api/communicator.h"

namespace ringlet::collectives {

// How bytes move between the rank's device and the host. The CUDA one is
// CudaStaging(gpu); tests pass plain memcpy.
struct StagingCopies {
  std::function<void(void* host, const void* device, size_t bytes)> to_host;
  std::function<void(void* device, const void* host, size_t bytes)> to_device;
  // Host memory for staging (pinned on GPUs); freed by the returned deleter.
  std::function<std::shared_ptr<void>(size_t bytes)> allocate_host;
};

// Copies for GPU `gpu` (a stream of its own, pinned host memory). Throws
// CollectiveError in builds without CUDA or when the GPU does not exist.
StagingCopies CudaStaging(int gpu);

// What the CUDA build registers (host_staged_cuda.cc, linked whole) to
// make CudaStaging's copies.
using CudaStagingFactory = StagingCopies (*)(int gpu);
// Called once, by host_staged_cuda.cc's static initialiser.
void RegisterCudaStagingFactory(CudaStagingFactory factory);

// `host` (a communicator over host memory) for callers whose buffers are
// device memory, moved with `copies`. Takes ownership of `host`.
std::unique_ptr<Communicator> StageThroughHost(
    std::unique_ptr<Communicator> host, StagingCopies copies);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_HOST_STAGED_H_
