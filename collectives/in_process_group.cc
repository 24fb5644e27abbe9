#include "collectives/in_process_group.h"

#include <stdexcept>
#include <utility>

namespace ringlet::collectives {

InProcessGroup::InProcessGroup(std::vector<RankDevice> devices)
    : devices_(std::move(devices)) {
  if (devices_.empty()) {
    throw std::invalid_argument("a process group needs at least 1 rank");
  }
}

std::vector<std::unique_ptr<Communicator>> InProcessGroup::CreateGroup(
    const std::string& backend, const CommOptions& options) {
  return collectives::CreateGroup(backend, devices_, options);
}

}  // namespace ringlet::collectives
