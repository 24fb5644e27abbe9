#include "collectives/backends/process_world.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "collectives/api/collective_error.h"
#include "collectives/backends/host_staged.h"
#include "collectives/backends/registry.h"

namespace ringlet::collectives {

std::string ProcessWorld::WhyNoRegroup() const {
  return "a job under mpirun ends with any of its processes (launch it with "
         "torchrun's environment or srun instead)";
}

std::shared_ptr<ProcessWorld> ProcessWorld::Regroup(int) {
  throw CollectiveError(WhyNoRegroup());
}

std::vector<std::unique_ptr<Communicator>> CreateTransportGroup(
    ProcessWorld& world, const AlgorithmList& algorithms,
    const CommOptions& options) {
  std::vector<std::unique_ptr<Communicator>> comms;
  for (std::unique_ptr<Transport>& transport : world.CreateTransports()) {
    comms.push_back(std::make_unique<TransportCommunicator>(
        std::move(transport), algorithms, options, /*own_thread=*/true));
  }
  return comms;
}

bool RanksOnGpus(const ProcessWorld& world) {
  const std::vector<RankDevice> devices = world.local_devices();
  int gpus = 0;
  for (const RankDevice& d : devices) gpus += d.is_gpu ? 1 : 0;
  if (gpus != 0 && gpus != static_cast<int>(devices.size())) {
    throw std::invalid_argument(
        "a process's ranks must all be GPUs or all host memory, not a mix");
  }
  return gpus > 0;
}

void ProcessWorld::SetLocalDevices(const std::vector<RankDevice>& devices) {
  if (static_cast<int>(devices.size()) != local_ranks()) {
    throw std::invalid_argument("process " + std::to_string(process()) +
                                " holds " + std::to_string(local_ranks()) +
                                " ranks but was given " +
                                std::to_string(devices.size()) + " devices");
  }
  local_devices_ = devices;
}

std::vector<std::unique_ptr<Communicator>> ProcessWorld::CreateGroup(
    const std::string& backend, const CommOptions& options) {
  const BackendSpec* spec = FindBackend(backend);
  if (spec == nullptr || !spec->processes) {
    throw std::invalid_argument("unknown backend '" + backend +
                                "'; across processes this build has " +
                                BackendList(/*processes=*/true));
  }
  const bool on_gpus = RanksOnGpus(*this);
  std::vector<std::unique_ptr<Communicator>> comms =
      spec->processes(*this, options);
  if (on_gpus && !spec->device_memory) {
    const std::vector<RankDevice> devices = local_devices();
    for (size_t i = 0; i < comms.size(); ++i) {
      comms[i] =
          StageThroughHost(std::move(comms[i]), CudaStaging(devices[i].gpu));
    }
  }
  return comms;
}

}  // namespace ringlet::collectives
