#include "collectives/transport/host/host_group.h"

#include <stdexcept>
#include <string>

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
      local_(local),
      links_(new std::atomic<Link*>[static_cast<size_t>(size) * size]),
      notifier_(CountLocal(local) <= cores ? 2048 : 8),
      started_(new Progress[size]),
      gone_(new std::atomic<bool>[size]) {
  for (size_t i = 0; i < static_cast<size_t>(size) * size; ++i) {
    links_[i].store(nullptr, std::memory_order_relaxed);
  }
  for (int r = 0; r < size; ++r) {
    gone_[r].store(false);
  }
}

HostGroup::~HostGroup() {
  for (size_t i = 0; i < static_cast<size_t>(size_) * size_; ++i) {
    delete links_[i].load(std::memory_order_acquire);
  }
}

Link& HostGroup::link(int from, int to) {
  std::atomic<Link*>& slot = links_[static_cast<size_t>(from) * size_ + to];
  Link* link = slot.load(std::memory_order_acquire);
  if (link != nullptr) return *link;
  if (!local_[from] || !local_[to]) {
    throw std::logic_error("host transport: link " + std::to_string(from) +
                           " -> " + std::to_string(to) +
                           " leaves this process");
  }
  // Both ends may get here first: one link wins, the other is dropped.
  auto made = std::make_unique<Link>();
  if (slot.compare_exchange_strong(link, made.get(),
                                   std::memory_order_acq_rel)) {
    links_made_.fetch_add(1, std::memory_order_relaxed);
    return *made.release();
  }
  return *link;
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
