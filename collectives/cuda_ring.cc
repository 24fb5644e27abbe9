#include "collectives/cuda_ring.h"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "collectives/naive_algorithm.h"
#include "collectives/ring_algorithm.h"
#include "collectives/transport/cuda/cuda_transport.h"
#include "collectives/transport_communicator.h"

namespace ringlet::collectives {

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // Clear the error so later calls start clean.
    return 0;
  }
  return count;
}

std::vector<std::unique_ptr<Communicator>> CreateCudaRingGroup(
    int size, const CommOptions& options) {
  if (size < 1) {
    throw std::invalid_argument("a group needs at least 1 rank, got " +
                                std::to_string(size));
  }
  const int devices = CudaDeviceCount();
  if (devices < size) {
    throw CollectiveError("the CUDA ring needs " + std::to_string(size) +
                          " GPUs, this machine has " + std::to_string(devices) +
                          "; ask for fewer ranks, or use the host ring on "
                          "CPU devices");
  }
  std::vector<int> device_ids(size);
  for (int r = 0; r < size; ++r) device_ids[r] = r;
  // Direct peer access makes the ring's copies one hop; without it CUDA
  // stages them through host memory, which is slower but still correct.
  for (int r = 0; r < size && size > 1; ++r) {
    const int next = (r + 1) % size;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, r, next) == cudaSuccess && can) {
      cudaSetDevice(next);
      const cudaError_t err = cudaDeviceEnablePeerAccess(r, 0);
      if (err == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
    }
  }
  auto ranks = std::make_shared<cuda::CudaRanks>(device_ids);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  auto group = std::make_shared<host::HostGroup>(size, cores > 0 ? cores : 1);
  const AlgorithmList algorithms = {std::make_shared<RingAlgorithm>(),
                                    std::make_shared<NaiveAlgorithm>()};
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < size; ++r) {
    comms.push_back(std::make_unique<TransportCommunicator>(
        std::make_unique<cuda::CudaTransport>(group, ranks, r), algorithms,
        options));
  }
  return comms;
}

}  // namespace ringlet::collectives
