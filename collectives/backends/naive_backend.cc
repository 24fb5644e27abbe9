// The naive backend: the textbook reduce to one rank, then broadcast
// (algorithms/naive), every benchmark's baseline; over host memory or the
// CUDA transport, as the ring.
#include <memory>

#include "collectives/algorithms/naive_algorithm.h"
#include "collectives/algorithms/ring_algorithm.h"
#include "collectives/backends/cuda_ring.h"
#include "collectives/backends/host_group_factory.h"
#include "collectives/backends/process_world.h"
#include "collectives/backends/registry.h"

namespace ringlet::collectives {
namespace {

BackendSpec NaiveSpec() {
  BackendSpec spec;
  spec.name = "naive";
  spec.summary = "naive (reduce to one rank, then broadcast: the baseline)";
  spec.host = [](int size, const CommOptions& options) {
    return CreateHostGroup(
        size,
        {std::make_shared<NaiveAlgorithm>(), std::make_shared<RingAlgorithm>()},
        options);
  };
  spec.gpus = [](const std::vector<int>& gpus, const CommOptions& options) {
    return CreateCudaRingGroup(gpus, "naive", options);
  };
  spec.processes = [](ProcessWorld& world, const CommOptions& options) {
    return CreateTransportGroup(
        world,
        {std::make_shared<NaiveAlgorithm>(), std::make_shared<RingAlgorithm>()},
        options);
  };
  return spec;
}

}  // namespace

RINGLET_REGISTER_BACKEND(NaiveSpec);

}  // namespace ringlet::collectives
