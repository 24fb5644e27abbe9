// The cuda_ring backend's groups, registered when linked in.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "collectives/algorithms/naive_algorithm.h"
#include "collectives/algorithms/ring_algorithm.h"
#include "collectives/backends/cuda_ring.h"
#include "collectives/backends/gpu_list.h"
#include "collectives/backends/transport_communicator.h"
#include "collectives/transport/cuda/cuda_transport.h"
#include "gpu/cuda_error.h"
#include "gpu/device_guard.h"
#include "gpu/device_probe.h"

namespace ringlet::collectives {
namespace {

AlgorithmList Algorithms(const std::string& first) {
  const auto ring = std::make_shared<RingAlgorithm>();
  const auto naive = std::make_shared<NaiveAlgorithm>();
  if (first == "ring") return {ring, naive};
  if (first == "naive") return {naive, ring};
  throw std::invalid_argument(
      "the CUDA transport runs 'ring' or 'naive', not '" + first + "'");
}

// Direct peer access makes a copy between two GPUs one hop; without it CUDA
// stages it through host memory, slower but still correct. Ranks on the
// same GPU need nothing.
void EnablePeerAccess(const std::vector<int>& gpus) {
  const size_t n = gpus.size();
  for (size_t r = 0; r < n && n > 1; ++r) {
    const int from = gpus[r], to = gpus[(r + 1) % n];
    int can = 0;
    if (from == to || cudaDeviceCanAccessPeer(&can, to, from) != cudaSuccess ||
        !can) {
      cudaGetLastError();
      continue;
    }
    gpu::DeviceGuard guard(to);
    if (cudaDeviceEnablePeerAccess(from, 0) != cudaSuccess) cudaGetLastError();
  }
}

std::vector<std::unique_ptr<Communicator>> CreateGroup(
    const std::vector<int>& gpus, const std::string& first_algorithm,
    const CommOptions& options) {
  const std::string backend = first_algorithm + " (CUDA)";
  const AlgorithmList algorithms = Algorithms(first_algorithm);
  std::string reason;
  CheckGpusExist(backend, gpus, gpu::CountCudaDevices(&reason), reason);
  const int size = static_cast<int>(gpus.size());
  std::shared_ptr<cuda::CudaRanks> ranks;
  try {
    EnablePeerAccess(gpus);
    ranks = std::make_shared<cuda::CudaRanks>(gpus);
  } catch (const gpu::CudaError& e) {
    throw CollectiveError("the " + backend + " backend could not start on " +
                          GpuListName(gpus) + ": " + e.what());
  }
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  auto group = std::make_shared<host::HostGroup>(size, cores > 0 ? cores : 1);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < size; ++r) {
    comms.push_back(std::make_unique<TransportCommunicator>(
        std::make_unique<cuda::CudaTransport>(group, ranks, r), algorithms,
        options));
  }
  return comms;
}

[[maybe_unused]] const bool kRegistered =
    (RegisterCudaRingFactory(&CreateGroup), true);

}  // namespace
}  // namespace ringlet::collectives
