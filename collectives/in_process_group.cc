#include "collectives/in_process_group.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace ringlet::collectives {

InProcessGroup::InProcessGroup(std::vector<RankDevice> devices)
    : devices_(std::move(devices)) {
  if (devices_.empty()) {
    throw std::invalid_argument("a process group needs at least 1 rank");
  }
}

void InProcessGroup::SetLocalDevices(const std::vector<RankDevice>& devices) {
  if (devices.size() != devices_.size()) {
    throw std::invalid_argument(
        "a process group of " + std::to_string(devices_.size()) +
        " ranks was given " + std::to_string(devices.size()) + " devices");
  }
  devices_ = devices;
}

std::vector<std::unique_ptr<Communicator>> InProcessGroup::CreateGroup(
    const std::string& backend, const CommOptions& options) {
  return collectives::CreateGroup(backend, devices_, options);
}

}  // namespace ringlet::collectives
