// A key-value store that outlives any one process of a job (etcd): where
// the job's rendezvous is, and who hosts the next one when the process
// hosting it is lost. The store decides (PutIfAbsent is atomic in it), so
// the processes need no consensus of their own.
#ifndef RINGLET_COLLECTIVES_BACKENDS_TCP_RENDEZVOUS_STORE_H_
#define RINGLET_COLLECTIVES_BACKENDS_TCP_RENDEZVOUS_STORE_H_

#include <map>
#include <optional>
#include <string>

namespace ringlet::collectives::tcp {

// Every call is safe from several threads and throws CollectiveError,
// naming the store and what to check, when the store cannot be reached.
class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;
  // What and where it is, for messages: "etcd at http://127.0.0.1:2379".
  virtual std::string name() const = 0;
  virtual std::optional<std::string> Get(const std::string& key) = 0;
  virtual void Put(const std::string& key, const std::string& value) = 0;
  // Sets `key` to `value` unless it has a value already; returns the value
  // it holds afterwards (`value` exactly when this call set it).
  virtual std::string PutIfAbsent(const std::string& key,
                                  const std::string& value) = 0;
  // The keys that start with `prefix`, with their values.
  virtual std::map<std::string, std::string> List(
      const std::string& prefix) = 0;
};

}  // namespace ringlet::collectives::tcp

#endif  // RINGLET_COLLECTIVES_BACKENDS_TCP_RENDEZVOUS_STORE_H_
