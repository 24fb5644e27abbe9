// Waiting for another thread's progress: spin briefly, then yield, then
// sleep on a futex. Waking a blocked thread costs tens of microseconds, so
// short waits never block; long waits never hold a core another rank needs.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_HOST_NOTIFIER_H_
#define RINGLET_COLLECTIVES_TRANSPORT_HOST_NOTIFIER_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace ringlet::collectives::host {

using Clock = std::chrono::steady_clock;

enum class WaitResult { kReady, kAborted, kTimedOut };

class Notifier {
 public:
  // `spin` is how many times a wait polls before it starts yielding: long
  // enough to catch a peer a step behind on its own core, and close to zero
  // when ranks outnumber cores, where the peer may need this very core.
  explicit Notifier(int spin = 2048) : spin_(spin) {}

  // Returns kReady once ready() is true, kAborted once stop() is true, and
  // kTimedOut at the deadline, whichever comes first. ready() is checked
  // before stop(), so what is ready is never lost to a stop.
  template <typename Ready, typename Stop>
  WaitResult Wait(Ready&& ready, Stop&& stop, Clock::time_point deadline);

  // Call after making something ready with a seq_cst store: wakes the
  // sleepers, if there are any. Costs one load otherwise.
  void NotifyAll();

 private:
  static void Relax();
  static void Yield();
  // Sleeps while epoch_ == expected, at most `timeout`.
  void Sleep(uint32_t expected, Clock::duration timeout);

  const int spin_;
  std::atomic<uint32_t> epoch_{0};
  std::atomic<int32_t> sleepers_{0};
};

template <typename Ready, typename Stop>
WaitResult Notifier::Wait(Ready&& ready, Stop&& stop,
                          Clock::time_point deadline) {
  // Phase 1: spinning catches a peer that is a step behind.
  for (int i = 0; i < spin_; ++i) {
    if (ready()) return WaitResult::kReady;
    Relax();
  }
  // Phase 2: yield the core for up to 200 us; with more ranks than cores the
  // rank we wait for may need exactly this core.
  const Clock::time_point yield_until =
      Clock::now() + std::chrono::microseconds(200);
  while (true) {
    if (ready()) return WaitResult::kReady;
    if (stop()) return WaitResult::kAborted;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return WaitResult::kTimedOut;
    if (now >= yield_until) break;
    Yield();
  }
  // Phase 3: sleep, waking at least every 5 ms to check the deadline.
  while (true) {
    if (ready()) return WaitResult::kReady;
    if (stop()) return WaitResult::kAborted;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return WaitResult::kTimedOut;
    // Pairs with NotifyAll: either it sees this sleeper, or ready() below
    // sees what it published (both sides seq_cst; no lost wake-up).
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t epoch = epoch_.load(std::memory_order_seq_cst);
    if (!ready() && !stop()) {
      Sleep(epoch, std::min<Clock::duration>(deadline - now,
                                             std::chrono::milliseconds(5)));
    }
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace ringlet::collectives::host

#endif  // RINGLET_COLLECTIVES_TRANSPORT_HOST_NOTIFIER_H_
