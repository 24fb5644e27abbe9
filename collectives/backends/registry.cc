#include "collectives/backends/registry.h"

#include <map>
#include <mutex>

namespace ringlet::collectives {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, BackendSpec> specs;  // By name.
};

// Built on first use: registrations run from other files' static
// initialisers, in an order nobody chooses.
Registry& TheRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

}  // namespace

bool RegisterBackend(BackendSpec spec) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  const std::string name = spec.name;
  r.specs[name] = std::move(spec);
  return true;
}

const BackendSpec* FindBackend(const std::string& name) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  const auto it = r.specs.find(name);
  return it == r.specs.end() ? nullptr : &it->second;
}

std::vector<const BackendSpec*> RegisteredBackends() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<const BackendSpec*> out;
  for (const auto& [name, spec] : r.specs) out.push_back(&spec);
  return out;
}

std::string BackendList(bool processes) {
  std::vector<std::string> names;
  for (const BackendSpec* spec : RegisteredBackends()) {
    if (spec->available && !spec->available()) continue;
    if (spec->needs_processes && !processes) continue;
    names.push_back(spec->name);
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return out;
}

}  // namespace ringlet::collectives
