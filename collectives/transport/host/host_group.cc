#include "collectives/transport/host/host_group.h"

namespace ringlet::collectives::host {

HostGroup::HostGroup(int size, int cores)
    : size_(size),
      notifier_(size <= cores ? 2048 : 8),
      started_(new Progress[size]),
      gone_(new std::atomic<bool>[size]) {
  links_.reserve(static_cast<size_t>(size) * size);
  for (int i = 0; i < size * size; ++i) {
    links_.push_back(std::make_unique<Link>());
  }
  for (int r = 0; r < size; ++r) {
    gone_[r].store(false);
  }
}

void HostGroup::Abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(reason_mu_);
    if (aborted_.load(std::memory_order_relaxed)) return;
    reason_ = reason;
    aborted_.store(true, std::memory_order_seq_cst);
  }
  notifier_.NotifyAll();
}

void HostGroup::MarkGone(int rank) {
  gone_[rank].store(true, std::memory_order_seq_cst);
  notifier_.NotifyAll();
}

std::string HostGroup::abort_reason() const {
  std::lock_guard<std::mutex> lock(reason_mu_);
  return reason_;
}

}  // namespace ringlet::collectives::host
