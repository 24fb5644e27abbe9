#include "nn/optim/registry.h"

#include <map>
#include <mutex>
#include <stdexcept>

namespace ringlet::nn {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, OptimizerSpec> specs;  // By name.
};

// Built on first use: registrations run from other files' static
// initialisers, in an order nobody chooses.
Registry& TheRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

}  // namespace

bool RegisterOptimizer(OptimizerSpec spec) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  const std::string name = spec.name;
  r.specs[name] = std::move(spec);
  return true;
}

const OptimizerSpec& FindOptimizer(const std::string& name) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  const auto it = r.specs.find(name);
  if (it != r.specs.end()) return it->second;
  std::string names;
  for (const auto& [known, spec] : r.specs) {
    names += (names.empty() ? "" : ", ") + known;
  }
  throw std::invalid_argument("unknown optimizer '" + name + "'; use " + names);
}

std::vector<const OptimizerSpec*> RegisteredOptimizers() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<const OptimizerSpec*> out;
  for (const auto& [name, spec] : r.specs) out.push_back(&spec);
  return out;
}

bool Reads(const OptimizerSpec& spec, const std::string& setting,
           float* default_value) {
  for (const auto& [name, value] : spec.reads) {
    if (name != setting) continue;
    if (default_value != nullptr) *default_value = value;
    return true;
  }
  return false;
}

}  // namespace ringlet::nn
