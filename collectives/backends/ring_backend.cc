// The ring backend: ringlet's chunked, pipelined ring (algorithms/ring) over
// host memory between threads, or over the CUDA transport between GPU ranks
// (several may share a GPU); each communicator runs naive too when a call
// asks (CallOptions::algorithm).
#include <memory>

#include "collectives/algorithms/naive_algorithm.h"
#include "collectives/algorithms/ring_algorithm.h"
#include "collectives/backends/cuda_ring.h"
#include "collectives/backends/host_group_factory.h"
#include "collectives/backends/process_world.h"
#include "collectives/backends/registry.h"

namespace ringlet::collectives {
namespace {

BackendSpec RingSpec() {
  BackendSpec spec;
  spec.name = "ring";
  spec.summary = "ring (ringlet's ring: threads or GPUs, several a GPU)";
  spec.host = [](int size, const CommOptions& options) {
    return CreateHostGroup(
        size,
        {std::make_shared<RingAlgorithm>(), std::make_shared<NaiveAlgorithm>()},
        options);
  };
  spec.gpus = [](const std::vector<int>& gpus, const CommOptions& options) {
    return CreateCudaRingGroup(gpus, "ring", options);
  };
  spec.processes = [](ProcessWorld& world, const CommOptions& options) {
    return CreateTransportGroup(
        world,
        {std::make_shared<RingAlgorithm>(), std::make_shared<NaiveAlgorithm>()},
        options);
  };
  return spec;
}

}  // namespace

RINGLET_REGISTER_BACKEND(RingSpec);

}  // namespace ringlet::collectives
