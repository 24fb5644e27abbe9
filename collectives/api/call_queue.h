// A communicator's calls run in order on a thread of its own, so an
// asynchronous call returns at once and the caller goes on (c10d's
// ProcessGroupGloo runs its work on threads of its own the same way).
// Blocking calls run on the caller's thread once the queued ones have run:
// the order the caller made them in is the order they run in, on every
// rank. The thread is made on the first queued call.
#ifndef RINGLET_COLLECTIVES_API_CALL_QUEUE_H_
#define RINGLET_COLLECTIVES_API_CALL_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "collectives/api/work.h"

namespace ringlet::collectives {

class CallQueue {
 public:
  CallQueue() = default;
  // Runs what is queued (each call ends, successfully or not: a group
  // being torn down has been aborted first), then joins the thread.
  ~CallQueue();
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  // Queues `call`, `before` (may be null) to run first; the returned Work
  // is done once both have run, with the exception (any) rethrown by Wait,
  // and says how long `call` ran.
  std::unique_ptr<Work> Enqueue(std::function<void()> before,
                                std::function<void()> call);
  // Blocks until every queued call has run.
  void Drain();

 private:
  struct Pending;
  void Loop();

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Pending>> queue_;
  bool running_ = false;  // The thread is inside a call.
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_API_CALL_QUEUE_H_
