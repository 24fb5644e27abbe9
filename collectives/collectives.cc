#include "collectives/collectives.h"

#include <stdexcept>

#include "collectives/algorithms/naive_algorithm.h"
#include "collectives/algorithms/ring_algorithm.h"
#include "collectives/backends/cuda_ring.h"
#include "collectives/backends/host_group_factory.h"
#include "collectives/backends/nccl.h"

namespace ringlet::collectives {

std::vector<std::string> AvailableBackends() {
  std::vector<std::string> names = {"ring", "naive"};
  if (NcclCompiledIn()) names.push_back("nccl");
  return names;
}

std::vector<std::unique_ptr<Communicator>> CreateGroup(
    const std::string& backend, int size, const CommOptions& options) {
  const auto ring = std::make_shared<RingAlgorithm>();
  const auto naive = std::make_shared<NaiveAlgorithm>();
  if (backend == "ring") return CreateHostGroup(size, {ring, naive}, options);
  if (backend == "naive") return CreateHostGroup(size, {naive, ring}, options);
  if (backend == "nccl") return CreateNcclGroup(size, options);
  if (backend == "mpi") {
    throw std::invalid_argument(
        "the mpi backend needs processes started by mpirun (e.g. mpirun -np "
        "2 <program> --backend=mpi --devices=cpu:1); in one process use ring "
        "or naive");
  }
  std::string names;
  for (const std::string& name : AvailableBackends()) names += " " + name;
  throw std::invalid_argument("unknown backend '" + backend +
                              "'; this build has:" + names);
}

std::vector<std::unique_ptr<Communicator>> CreateGroup(
    const std::string& backend, const std::vector<RankDevice>& devices,
    const CommOptions& options) {
  if (devices.empty()) {
    throw std::invalid_argument("the " + backend +
                                " backend was given no device; a group needs "
                                "at least 1 rank");
  }
  std::vector<int> gpus;
  for (const RankDevice& device : devices) {
    if (device.is_gpu) gpus.push_back(device.gpu);
  }
  if (gpus.empty()) {
    // CreateGroup(backend, size) reads "nccl" as GPUs 0 to size - 1.
    if (backend == "nccl") {
      throw std::invalid_argument(
          "the nccl backend runs on GPUs, and these " +
          std::to_string(devices.size()) +
          " rank(s) are in host memory (CPU devices); use the ring or naive "
          "backend on CPU devices (mpi under mpirun), or put the ranks on "
          "GPUs");
    }
    return CreateGroup(backend, static_cast<int>(devices.size()), options);
  }
  if (gpus.size() != devices.size()) {
    throw std::invalid_argument(
        "a group's ranks must all be on the host or all on GPUs; got " +
        std::to_string(gpus.size()) + " GPU rank(s) and " +
        std::to_string(devices.size() - gpus.size()) + " host rank(s)");
  }
  if (backend == "ring" || backend == "naive") {
    return CreateCudaRingGroup(gpus, backend, options);
  }
  if (backend == "nccl") return CreateNcclGroup(gpus, options);
  // Names the backends (and explains mpi) as the host variant does.
  return CreateGroup(backend, static_cast<int>(devices.size()), options);
}

}  // namespace ringlet::collectives
