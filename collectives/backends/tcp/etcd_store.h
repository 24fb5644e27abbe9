// etcd (v3, through its JSON gateway over HTTP) as a job's rendezvous
// store: the store that torchelastic's etcd rendezvous uses, reached with
// libcurl. Each call is one HTTP request with a deadline of its own.
#ifndef RINGLET_COLLECTIVES_BACKENDS_TCP_ETCD_STORE_H_
#define RINGLET_COLLECTIVES_BACKENDS_TCP_ETCD_STORE_H_

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "collectives/backends/tcp/rendezvous_store.h"

namespace ringlet::collectives::tcp {

class EtcdStore : public RendezvousStore {
 public:
  // `endpoint`: "etcd://host:port" (or "http://host:port"), one of the
  // cluster's client URLs. Throws std::invalid_argument for any other
  // form. Reaches nothing yet: the first call does.
  explicit EtcdStore(
      const std::string& endpoint,
      std::chrono::milliseconds timeout = std::chrono::seconds(3));

  std::string name() const override { return "etcd at " + url_; }
  std::optional<std::string> Get(const std::string& key) override;
  void Put(const std::string& key, const std::string& value) override;
  std::string PutIfAbsent(const std::string& key,
                          const std::string& value) override;
  std::map<std::string, std::string> List(const std::string& prefix) override;

 private:
  // POSTs `body` to `path` ("/v3/kv/range"); the response's JSON text.
  std::string Call(const std::string& path, const std::string& body) const;

  std::string url_;  // "http://host:port"
  std::chrono::milliseconds timeout_;
};

// The store RINGLET_RENDEZVOUS_STORE names ("etcd://host:port"), or null
// for "". Throws std::invalid_argument naming the variable for anything
// else.
std::shared_ptr<RendezvousStore> StoreFromSetting(const std::string& setting);

}  // namespace ringlet::collectives::tcp

#endif  // RINGLET_COLLECTIVES_BACKENDS_TCP_ETCD_STORE_H_
