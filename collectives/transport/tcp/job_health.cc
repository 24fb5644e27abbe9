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

}  // namespace ringlet::collectives::tcp
