#include "collectives/transport/host/host_group.h"

namespace ringlet::collectives::host {

namespace {

int CountLocal(const std::vector<bool>& local) {
  int n = 0;
  for (bool is_local : local) n += is_local ? 1 : 0;
  return n;
}

}  // namespace

HostGroup::HostGroup(int size, int cores)
    : HostGroup(size, cores, std::vector<bool>(size, true)) {}

HostGroup::HostGroup(int size, int cores, const std::vector<bool>& local)
    : size_(size),
      notifier_(CountLocal(local) <= cores ? 2048 : 8),
      started_(new Progress[size]),
      gone_(new std::atomic<bool>[size]) {
  links_.resize(static_cast<size_t>(size) * size);
  for (int from = 0; from < size; ++from) {
    for (int to = 0; to < size; ++to) {
      if (local[from] && local[to]) {
        links_[from * size + to] = std::make_unique<Link>();
      }
    }
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
