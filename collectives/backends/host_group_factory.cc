#include "collectives/backends/host_group_factory.h"

#include <stdexcept>
#include <string>
#include <thread>

#include "collectives/transport/host/host_group.h"
#include "collectives/transport/host/host_transport.h"

namespace ringlet::collectives {

std::vector<std::unique_ptr<Communicator>> CreateHostGroup(
    int size, const AlgorithmList& algorithms, const CommOptions& options) {
  if (size < 1) {
    throw std::invalid_argument("a group needs at least 1 rank, got " +
                                std::to_string(size));
  }
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  auto group = std::make_shared<host::HostGroup>(size, cores > 0 ? cores : 1);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int rank = 0; rank < size; ++rank) {
    comms.push_back(std::make_unique<TransportCommunicator>(
        std::make_unique<host::HostTransport>(group, rank), algorithms, options,
        /*own_thread=*/true));
  }
  return comms;
}

}  // namespace ringlet::collectives
