// The nccl backend: NVIDIA NCCL, one rank per GPU, buffers in GPU memory;
// in builds with CUDA and NCCL (nccl.h says so otherwise).
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/backends/nccl.h"
#include "collectives/backends/process_world.h"
#include "collectives/backends/registry.h"

namespace ringlet::collectives {
namespace {

// Host and GPU list of one process, for the gather below: "host 0,1".
std::string Placement(const std::string& host, const std::vector<int>& gpus) {
  std::string out = host + " ";
  for (size_t i = 0; i < gpus.size(); ++i) {
    out += (i ? "," : "") + std::to_string(gpus[i]);
  }
  return out;
}

// NCCL allows one rank per GPU: throws CollectiveError naming the two
// processes that would share one, and the backends that allow it.
void CheckOneRankPerGpu(const std::vector<std::string>& placements) {
  std::map<std::pair<std::string, int>, int> owner;  // (host, gpu) -> process
  for (int p = 0; p < static_cast<int>(placements.size()); ++p) {
    std::istringstream in(placements[p]);
    std::string host, list;
    in >> host >> list;
    std::istringstream gpus(list);
    for (std::string gpu; std::getline(gpus, gpu, ',');) {
      const auto key = std::make_pair(host, std::stoi(gpu));
      const auto [it, fresh] = owner.emplace(key, p);
      if (!fresh) {
        throw CollectiveError(
            "the nccl backend allows one rank per GPU, but processes " +
            std::to_string(it->second) + " and " + std::to_string(p) +
            " both use cuda:" + gpu + " on host " + host +
            "; give each process its own GPU (--devices=auto takes the one "
            "of its local rank) or use --backend=ring or --backend=naive");
      }
    }
  }
}

// This process's ranks of a job over NCCL: the id travels through the
// world's broadcast.
Communicators ProcessRanks(ProcessWorld& world, const CommOptions& options) {
  NcclProcessLayout layout;
  layout.size = world.size();
  layout.first_rank = world.first_rank();
  layout.gpus.clear();
  if (RanksOnGpus(world)) {
    for (const RankDevice& d : world.local_devices()) {
      layout.gpus.push_back(d.gpu);
    }
  } else {
    // Devices never set (the benchmark): the processes of one host take
    // its GPUs in turn, local_ranks() each.
    const int first = world.process_on_host() * world.local_ranks();
    for (int i = 0; i < world.local_ranks(); ++i) {
      layout.gpus.push_back(first + i);
    }
  }
  // Collective, like the id's broadcast after it: every process is here.
  CheckOneRankPerGpu(
      world.GatherFromProcesses(Placement(world.host(), layout.gpus)));
  return CreateNcclRanks(
      layout,
      [&world](void* id, size_t bytes) { world.BroadcastBytes(id, bytes); },
      options);
}

BackendSpec NcclSpec() {
  BackendSpec spec;
  spec.name = "nccl";
  spec.summary = "nccl (NVIDIA NCCL, one rank per GPU)";
  spec.device_memory = true;
  spec.available = NcclCompiledIn;
  spec.host_refusal = [](int ranks) {
    return "the nccl backend runs on GPUs, and these " + std::to_string(ranks) +
           " rank(s) are in host memory (CPU devices); use the ring or naive "
           "backend on CPU devices (mpi under mpirun), or put the ranks on "
           "GPUs";
  };
  spec.first_gpus = [](int size, const CommOptions& options) {
    return CreateNcclGroup(size, options);
  };
  spec.gpus = [](const std::vector<int>& gpus, const CommOptions& options) {
    return CreateNcclGroup(gpus, options);
  };
  spec.processes = ProcessRanks;
  return spec;
}

}  // namespace

RINGLET_REGISTER_BACKEND(NcclSpec);

}  // namespace ringlet::collectives
