#include "collectives/transport/tcp/job_health.h"

namespace ringlet::collectives::tcp {

std::string JobHealth::reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}

void JobHealth::Fail(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_.load(std::memory_order_relaxed)) return;
  reason_ = reason;
  failed_.store(true, std::memory_order_release);
}

void JobHealth::SetLost(int process) {
  int none = -1;
  lost_.compare_exchange_strong(none, process, std::memory_order_acq_rel);
}

}  // namespace ringlet::collectives::tcp
