#include "collectives/transport/host/notifier.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace ringlet::collectives::host {
namespace {

// The futex word is the atomic's storage: std::atomic<uint32_t> is lock-free
// and has the same size and representation as uint32_t.
uint32_t* FutexWord(std::atomic<uint32_t>* word) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  return reinterpret_cast<uint32_t*>(word);
}

}  // namespace

void Notifier::Relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void Notifier::Yield() { sched_yield(); }

void Notifier::Sleep(uint32_t expected, Clock::duration timeout) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  timespec ts;
  ts.tv_sec = ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  // Returns at once when the epoch already moved (EAGAIN), on a wake-up or
  // at the timeout; the caller re-checks its condition in every case.
  syscall(SYS_futex, FutexWord(&epoch_), FUTEX_WAIT_PRIVATE, expected, &ts,
          nullptr, 0);
}

void Notifier::NotifyAll() {
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    syscall(SYS_futex, FutexWord(&epoch_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
            nullptr, 0);
  }
}

}  // namespace ringlet::collectives::host
