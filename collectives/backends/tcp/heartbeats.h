// Liveness of a TCP job's processes: every process and process 0 send each
// other a byte every `interval` over a connection of their own, on a
// thread of their own (so a process busy computing or loading data still
// beats). A process silent for `timeout` has stopped (SIGSTOP, a hung
// host) or its network is gone: process 0 names it and tells every other
// process why; a process whose connection to 0 falls silent names process
// 0. A closed connection is a dead process, unless the process said first
// that it leaves to regroup (Leave). Every wait of the job's transports and
// collectives looks at failed() and ends with reason() instead of waiting
// for its deadline; lost_process() names the process lost where known.
// Process 0 keeps watching after the first failure, so a regroup knows
// every process that died (IsDead) while the survivors gather.
#ifndef RINGLET_COLLECTIVES_BACKENDS_TCP_HEARTBEATS_H_
#define RINGLET_COLLECTIVES_BACKENDS_TCP_HEARTBEATS_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/transport/tcp/job_health.h"
#include "collectives/transport/tcp/socket.h"

namespace ringlet::collectives::tcp {

class Heartbeats {
 public:
  // `links[p]`: the connection to process p (process 0: one to each other
  // process; every other process: links[0] only), `names[p]` its name in
  // messages. Starts beating at once. `on_lost(p)`, where given, runs on
  // the beating thread when process p is first found dead: at once, even
  // while this process computes (TcpWorld tells a store it is alive).
  using OnLost = std::function<void(int)>;
  Heartbeats(int process, std::vector<Socket> links,
             std::vector<std::string> names, std::chrono::milliseconds interval,
             std::chrono::milliseconds timeout, JobHealth* health,
             OnLost on_lost = nullptr);
  ~Heartbeats();
  Heartbeats(const Heartbeats&) = delete;
  Heartbeats& operator=(const Heartbeats&) = delete;

  // Stops sending beats and watching, as a stopped process does, and goes
  // on again, as a woken one does (for tests).
  void Pause() { paused_.store(true); }
  void Resume() { paused_.store(false); }
  // A process other than 0 stops beating and tells process 0 it leaves to
  // regroup the job (`reason`: why), so its closing connection is not
  // taken for its death.
  void Leave(const std::string& reason);
  // On process 0: whether process `p` died (its connection closed without
  // Leave, or it fell silent for the timeout).
  bool IsDead(int p) const;

 private:
  void Loop();
  // Reads what `p` sent; false once its connection has closed.
  bool Drain(int p, Clock::time_point now);
  // Acts on a notice from `p` (a failure relayed by process 0, or p's
  // leaving).
  void OnNotice(int p, const std::string& notice);
  void MarkDead(int p, const std::string& reason);
  void Report(const std::string& reason, int lost);
  void Stop();

  const int process_;
  std::vector<Socket> links_;
  const std::vector<std::string> names_;
  const std::chrono::milliseconds interval_, timeout_;
  JobHealth* const health_;
  const OnLost on_lost_;
  std::vector<Clock::time_point> last_heard_;
  std::vector<std::string> pending_;  // Bytes of a notice so far.
  mutable std::mutex mu_;
  std::vector<bool> dead_, left_;  // Guarded by mu_.
  std::atomic<bool> stop_{false}, paused_{false};
  bool reported_ = false;
  std::thread thread_;
};

}  // namespace ringlet::collectives::tcp

#endif  // RINGLET_COLLECTIVES_BACKENDS_TCP_HEARTBEATS_H_
