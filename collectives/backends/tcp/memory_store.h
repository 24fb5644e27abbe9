// A RendezvousStore in this process's memory, for tests whose processes
// are threads: it outlives any one of them as etcd outlives a process.
#ifndef RINGLET_COLLECTIVES_BACKENDS_TCP_MEMORY_STORE_H_
#define RINGLET_COLLECTIVES_BACKENDS_TCP_MEMORY_STORE_H_

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "collectives/backends/tcp/rendezvous_store.h"

namespace ringlet::collectives::tcp {

class MemoryStore : public RendezvousStore {
 public:
  std::string name() const override { return "a store in memory"; }
  std::optional<std::string> Get(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }
  void Put(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    values_[key] = value;
  }
  std::string PutIfAbsent(const std::string& key,
                          const std::string& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    return values_.emplace(key, value).first->second;
  }
  std::map<std::string, std::string> List(const std::string& prefix) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, std::string> found;
    for (auto it = values_.lower_bound(prefix);
         it != values_.end() &&
         it->first.compare(0, prefix.size(), prefix) == 0;
         ++it) {
      found.insert(*it);
    }
    return found;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> values_;
};

}  // namespace ringlet::collectives::tcp

#endif  // RINGLET_COLLECTIVES_BACKENDS_TCP_MEMORY_STORE_H_
