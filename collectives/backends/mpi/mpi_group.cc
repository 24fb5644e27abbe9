// MpiWorld::CreateGroup: the communicators of one group of a job launched
// by mpirun, for each backend.
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "collectives/algorithms/naive_algorithm.h"
#include "collectives/algorithms/ring_algorithm.h"
#include "collectives/api/collective_error.h"
#include "collectives/backends/host_staged.h"
#include "collectives/backends/mpi/mpi_communicator.h"
#include "collectives/backends/mpi/mpi_transport.h"
#include "collectives/backends/nccl.h"
#include "collectives/backends/registry.h"
#include "collectives/backends/transport_communicator.h"

namespace ringlet::collectives::mpi {
namespace {

// The ring and naive algorithms over MpiTransport: each local rank gets a
// transport whose in-process peers share one HostGroup.
std::vector<std::unique_ptr<Communicator>> CreateTransportGroup(
    const std::shared_ptr<MpiWorld>& world, const AlgorithmList& algorithms,
    const CommOptions& options) {
  // Tags name the link (sender * size + receiver); MPI guarantees 32767.
  int* tag_ub = nullptr;
  int found = 0;
  world->Call("MPI_Comm_get_attr (MPI_TAG_UB)", [&] {
    return MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
  });
  const int64_t links = static_cast<int64_t>(world->size()) * world->size();
  if (found && tag_ub != nullptr && links > *tag_ub) {
    throw CollectiveError("a ring of " + std::to_string(world->size()) +
                          " ranks needs more MPI tags than this MPI has (" +
                          std::to_string(*tag_ub) + ")");
  }
  std::vector<bool> local(world->size(), false);
  for (int i = 0; i < world->local_ranks(); ++i) {
    local[world->first_rank() + i] = true;
  }
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  auto group = std::make_shared<host::HostGroup>(world->size(),
                                                 cores > 0 ? cores : 1, local);
  const MPI_Comm comm = world->DupWorld();
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int i = 0; i < world->local_ranks(); ++i) {
    comms.push_back(std::make_unique<TransportCommunicator>(
        std::make_unique<MpiTransport>(world, group, comm,
                                       world->first_rank() + i),
        algorithms, options, /*own_thread=*/true));
  }
  return comms;
}

// True when every local rank is on a GPU, false when every one is on the
// host; a mix is an error.
bool RanksOnGpus(const std::vector<RankDevice>& devices) {
  int gpus = 0;
  for (const RankDevice& d : devices) gpus += d.is_gpu ? 1 : 0;
  if (gpus != 0 && gpus != static_cast<int>(devices.size())) {
    throw std::invalid_argument(
        "a process's ranks must all be GPUs or all host memory, not a mix");
  }
  return gpus > 0;
}

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

}  // namespace

std::vector<std::unique_ptr<Communicator>> MpiWorld::CreateGroup(
    const std::string& backend, const CommOptions& options) {
  // The world outlives every communicator made from it.
  std::shared_ptr<MpiWorld> self = shared_from_this();
  const auto ring = std::make_shared<RingAlgorithm>();
  const auto naive = std::make_shared<NaiveAlgorithm>();
  const bool on_gpus = RanksOnGpus(local_devices_);
  // Host-memory backends reach GPU ranks through host staging.
  auto staged = [&](std::vector<std::unique_ptr<Communicator>> comms) {
    if (!on_gpus) return comms;
    for (size_t i = 0; i < comms.size(); ++i) {
      comms[i] = StageThroughHost(std::move(comms[i]),
                                  CudaStaging(local_devices_[i].gpu));
    }
    return comms;
  };
  if (backend == "ring") {
    return staged(CreateTransportGroup(self, {ring, naive}, options));
  }
  if (backend == "naive") {
    return staged(CreateTransportGroup(self, {naive, ring}, options));
  }
  if (backend == "mpi") {
    std::vector<std::unique_ptr<Communicator>> comms;
    comms.push_back(std::make_unique<MpiCommunicator>(self, options));
    return staged(std::move(comms));
  }
  if (backend == "nccl") {
    NcclProcessLayout layout;
    layout.size = size();
    layout.first_rank = first_rank();
    layout.gpus.clear();
    if (on_gpus) {
      for (const RankDevice& d : local_devices_) layout.gpus.push_back(d.gpu);
    } else {
      // Devices never set (the benchmark): processes on one host take its
      // GPUs in turn, local_ranks() each.
      const char* local_rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
      const int first =
          (local_rank ? std::atoi(local_rank) : 0) * local_ranks();
      for (int i = 0; i < local_ranks(); ++i) layout.gpus.push_back(first + i);
    }
    // Collective, like the id's broadcast after it: every process is here.
    CheckOneRankPerGpu(GatherFromProcesses(Placement(host_, layout.gpus)));
    return CreateNcclRanks(
        layout,
        [this](void* id, size_t bytes) {
          Call("MPI_Bcast (NCCL unique id)", [&] {
            return MPI_Bcast(id, static_cast<int>(bytes), MPI_BYTE,
                             /*root=*/0, MPI_COMM_WORLD);
          });
        },
        options);
  }
  throw std::invalid_argument("unknown backend '" + backend +
                              "'; under mpirun this build has " +
                              BackendList(/*processes=*/true));
}

}  // namespace ringlet::collectives::mpi
