// Specs registered by name from their own files' static initialisers (the
// optimizers, nn/optim/registry.h; the collective backends,
// collectives/backends/registry.h): one map per Spec type, made on first
// use, since registrations run in an order nobody chooses. Spec has a
// `name`; a later spec of the same name replaces the first (a test's).
#ifndef RINGLET_GPU_NAMED_REGISTRY_H_
#define RINGLET_GPU_NAMED_REGISTRY_H_

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ringlet::gpu {

template <typename Spec>
class NamedRegistry {
 public:
  static NamedRegistry& Get() {
    static NamedRegistry* registry = new NamedRegistry;  // Never destroyed.
    return *registry;
  }

  bool Register(Spec spec) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string name = spec.name;
    specs_[name] = std::move(spec);
    return true;
  }
  // Null when nothing of that name registered. Specs are never removed, so
  // the pointer stays valid.
  const Spec* Find(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = specs_.find(name);
    return it == specs_.end() ? nullptr : &it->second;
  }
  // Every spec, by name.
  std::vector<const Spec*> All() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<const Spec*> out;
    for (const auto& [name, spec] : specs_) out.push_back(&spec);
    return out;
  }

 private:
  std::mutex mu_;
  std::map<std::string, Spec> specs_;
};

}  // namespace ringlet::gpu

#endif  // RINGLET_GPU_NAMED_REGISTRY_H_
