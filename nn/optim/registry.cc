#include "nn/optim/registry.h"

#include <stdexcept>

#include "gpu/named_registry.h"

namespace ringlet::nn {
namespace {

gpu::NamedRegistry<OptimizerSpec>& Specs() {
  return gpu::NamedRegistry<OptimizerSpec>::Get();
}

}  // namespace

bool RegisterOptimizer(OptimizerSpec spec) {
  return Specs().Register(std::move(spec));
}

const OptimizerSpec& FindOptimizer(const std::string& name) {
  if (const OptimizerSpec* spec = Specs().Find(name)) return *spec;
  std::string names;
  for (const OptimizerSpec* spec : Specs().All()) {
    names += (names.empty() ? "" : ", ") + spec->name;
  }
  throw std::invalid_argument("unknown optimizer '" + name + "'; use " + names);
}

std::vector<const OptimizerSpec*> RegisteredOptimizers() {
  return Specs().All();
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
