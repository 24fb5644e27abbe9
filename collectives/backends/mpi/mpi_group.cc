// What the backends need of an mpirun job (ProcessWorld): MPI transports
// for the ring and naive algorithms, the NCCL id's broadcast, and
// MPI_Allreduce itself.
#include <cstdlib>
#include <string>
#include <thread>

#include "collectives/api/collective_error.h"
#include "collectives/backends/mpi/mpi_communicator.h"
#include "collectives/backends/mpi/mpi_transport.h"
#include "collectives/backends/mpi/mpi_world.h"

namespace ringlet::collectives::mpi {

std::vector<std::unique_ptr<Transport>> MpiWorld::CreateTransports() {
  // Tags name the link (sender * size + receiver); MPI guarantees 32767.
  int* tag_ub = nullptr;
  int found = 0;
  Call("MPI_Comm_get_attr (MPI_TAG_UB)", [&] {
    return MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
  });
  const int64_t links = static_cast<int64_t>(size()) * size();
  if (found && tag_ub != nullptr && links > *tag_ub) {
    throw CollectiveError("a ring of " + std::to_string(size()) +
                          " ranks needs more MPI tags than this MPI has (" +
                          std::to_string(*tag_ub) + ")");
  }
  // Each local rank's transport: its in-process peers share one HostGroup.
  std::vector<bool> local(size(), false);
  for (int i = 0; i < local_ranks(); ++i) local[first_rank() + i] = true;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  auto group =
      std::make_shared<host::HostGroup>(size(), cores > 0 ? cores : 1, local);
  const MPI_Comm comm = DupWorld();
  // The world outlives every transport made from it.
  const std::shared_ptr<MpiWorld> self = shared_from_this();
  std::vector<std::unique_ptr<Transport>> transports;
  for (int i = 0; i < local_ranks(); ++i) {
    transports.push_back(
        std::make_unique<MpiTransport>(self, group, comm, first_rank() + i));
  }
  return transports;
}

void MpiWorld::BroadcastBytes(void* data, size_t bytes) {
  if (bytes > static_cast<size_t>(INT32_MAX)) {
    throw CollectiveError("MPI_Bcast takes at most 2 GiB, not " +
                          std::to_string(bytes) + " bytes");
  }
  Call("MPI_Bcast", [&] {
    return MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, /*root=*/0,
                     MPI_COMM_WORLD);
  });
}

std::unique_ptr<Communicator> MpiWorld::CreateNativeCommunicator(
    const CommOptions& options) {
  return std::make_unique<MpiCommunicator>(shared_from_this(), options);
}

int MpiWorld::process_on_host() const {
  const char* local_rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  return local_rank ? std::atoi(local_rank) : 0;
}

}  // namespace ringlet::collectives::mpi
