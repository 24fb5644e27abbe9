// The failure of a job as every wait of its transports sees it: set once,
// by the first failure found outside a call (Heartbeats: a process that
// stopped answering or died), so a rank blocked on a peer ends with that
// reason instead of waiting for its deadline.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_TCP_JOB_HEALTH_H_
#define RINGLET_COLLECTIVES_TRANSPORT_TCP_JOB_HEALTH_H_

#include <atomic>
#include <mutex>
#include <string>

namespace ringlet::collectives::tcp {

class JobHealth {
 public:
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  std::string reason() const;
  // The first reason wins.
  void Fail(const std::string& reason);
  // The process whose loss failed the job, once the heartbeats know it (a
  // failed call alone does not say whose fault it was); -1 before. The
  // first one named wins.
  int lost_process() const { return lost_.load(std::memory_order_acquire); }
  void SetLost(int process);

 private:
  std::atomic<bool> failed_{false};
  std::atomic<int> lost_{-1};
  mutable std::mutex mu_;
  std::string reason_;
};

}  // namespace ringlet::collectives::tcp

#endif  // RINGLET_COLLECTIVES_TRANSPORT_TCP_JOB_HEALTH_H_
