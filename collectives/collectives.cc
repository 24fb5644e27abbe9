#include "collectives/collectives.h"

#include <stdexcept>

#include "collectives/backends/registry.h"

namespace ringlet::collectives {

namespace {

// A backend this build lacks (nccl without NCCL) still checks its
// arguments, then says what is missing: its factory throws.
const BackendSpec& Backend(const std::string& backend) {
  const BackendSpec* spec = FindBackend(backend);
  if (spec == nullptr) {
    throw std::invalid_argument("unknown backend '" + backend +
                                "'; this build has " + BackendList(false));
  }
  return *spec;
}

}  // namespace

std::vector<std::string> AvailableBackends() {
  std::vector<std::string> names;
  for (const BackendSpec* spec : RegisteredBackends()) {
    if (spec->needs_processes) continue;
    if (spec->available && !spec->available()) continue;
    names.push_back(spec->name);
  }
  return names;
}

std::vector<std::unique_ptr<Communicator>> CreateGroup(
    const std::string& backend, int size, const CommOptions& options) {
  const BackendSpec& spec = Backend(backend);
  if (spec.host) return spec.host(size, options);
  if (spec.first_gpus) return spec.first_gpus(size, options);
  throw std::invalid_argument(spec.host_refusal(size));
}

std::vector<std::unique_ptr<Communicator>> CreateGroup(
    const std::string& backend, const std::vector<RankDevice>& devices,
    const CommOptions& options) {
  if (devices.empty()) {
    throw std::invalid_argument("the " + backend +
                                " backend was given no device; a group needs "
                                "at least 1 rank");
  }
  std::vector<int> gpus;
  for (const RankDevice& device : devices) {
    if (device.is_gpu) gpus.push_back(device.gpu);
  }
  if (gpus.empty()) {
    const BackendSpec& spec = Backend(backend);
    const int ranks = static_cast<int>(devices.size());
    if (!spec.host) throw std::invalid_argument(spec.host_refusal(ranks));
    return spec.host(ranks, options);
  }
  if (gpus.size() != devices.size()) {
    throw std::invalid_argument(
        "a group's ranks must all be on the host or all on GPUs; got " +
        std::to_string(gpus.size()) + " GPU rank(s) and " +
        std::to_string(devices.size() - gpus.size()) + " host rank(s)");
  }
  const BackendSpec& spec = Backend(backend);
  if (!spec.gpus) throw std::invalid_argument(spec.gpu_refusal);
  return spec.gpus(gpus, options);
}

}  // namespace ringlet::collectives
