#include "collectives/backends/registry.h"

#include "gpu/named_registry.h"

namespace ringlet::collectives {
namespace {

gpu::NamedRegistry<BackendSpec>& Specs() {
  return gpu::NamedRegistry<BackendSpec>::Get();
}

}  // namespace

bool RegisterBackend(BackendSpec spec) {
  return Specs().Register(std::move(spec));
}

const BackendSpec* FindBackend(const std::string& name) {
  return Specs().Find(name);
}

std::vector<const BackendSpec*> RegisteredBackends() { return Specs().All(); }

std::string BackendList(bool processes) {
  std::vector<std::string> names;
  for (const BackendSpec* spec : RegisteredBackends()) {
    if (spec->available && !spec->available()) continue;
    if (processes ? !spec->processes : spec->needs_processes) continue;
    names.push_back(spec->name);
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return out;
}

}  // namespace ringlet::collectives
