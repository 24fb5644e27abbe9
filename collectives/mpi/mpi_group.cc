// MpiWorld::CreateGroup: the communicators of one group of a job launched
// by mpirun, for each backend.
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "collectives/collective_error.h"
#include "collectives/mpi/mpi_communicator.h"
#include "collectives/mpi/mpi_transport.h"
#include "collectives/naive_algorithm.h"
#include "collectives/nccl.h"
#include "collectives/ring_algorithm.h"
#include "collectives/transport_communicator.h"

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
        algorithms, options));
  }
  return comms;
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> MpiWorld::CreateGroup(
    const std::string& backend, const CommOptions& options) {
  // The world outlives every communicator made from it.
  std::shared_ptr<MpiWorld> self = shared_from_this();
  const auto ring = std::make_shared<RingAlgorithm>();
  const auto naive = std::make_shared<NaiveAlgorithm>();
  if (backend == "ring")
    return CreateTransportGroup(self, {ring, naive}, options);
  if (backend == "naive") {
    return CreateTransportGroup(self, {naive, ring}, options);
  }
  if (backend == "mpi") {
    std::vector<std::unique_ptr<Communicator>> comms;
    comms.push_back(std::make_unique<MpiCommunicator>(self, options));
    return comms;
  }
  if (backend == "nccl") {
    NcclProcessLayout layout;
    layout.size = size();
    layout.first_rank = first_rank();
    layout.local_ranks = local_ranks();
    // Processes on one host take its GPUs in turn, local_ranks() each.
    const char* local_rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    layout.first_device =
        (local_rank ? std::atoi(local_rank) : 0) * local_ranks();
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
                              "'; under mpirun this build has: ring "
                              "naive mpi" +
                              std::string(NcclCompiledIn() ? " nccl" : ""));
}

}  // namespace ringlet::collectives::mpi
