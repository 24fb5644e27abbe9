// The state shared by the ranks of one in-process group: a mailbox per
// directed link, the abort flag, and each rank's progress (for messages).
//
// A link (128 KiB) is made the first time either end uses it, so memory
// grows with the links an algorithm uses (2K for the ring and the naive
// algorithm), not with all K^2 pairs (K = 128 would need 2 GiB).
#ifndef RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_GROUP_H_
#define RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_GROUP_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/transport/call_desc.h"
#include "collectives/transport/host/notifier.h"

namespace ringlet::collectives::host {

// A message in flight. Large payloads are read in place from the sender's
// memory (zero copy), so only their address travels; small ones are copied
// into the message itself, so the sender need not wait for the receiver
// before it may reuse its buffer (the latency of tiny allreduces).
struct alignas(64) Message {
  static constexpr size_t kInlineBytes = 64;
  Envelope envelope;
  const void* data = nullptr;  // Points at `inline_data` when inline.
  size_t bytes = 0;
  alignas(64) unsigned char inline_data[kInlineBytes];
};

// One direction of one link: a single-producer, single-consumer queue.
struct Link {
  static constexpr uint64_t kCapacity = 1024;
  alignas(64) std::atomic<uint64_t> posted{0};    // Written by the sender.
  alignas(64) std::atomic<uint64_t> consumed{0};  // Written by the receiver.
  // 1 while the receiver reads the current message in place (from a match
  // to its release): a sender leaving a failed call waits for 0.
  std::atomic<uint32_t> reading{0};
  alignas(64) Message slots[kCapacity];
};

class HostGroup {
 public:
  // Waits spin only while the group has no more ranks than `cores`.
  HostGroup(int size, int cores);
  // A group of which only the ranks with local[r] live in this process (the
  // others are reached by another transport): links exist between local
  // ranks only, and only they count against `cores`.
  HostGroup(int size, int cores, const std::vector<bool>& local);
  ~HostGroup();
  HostGroup(const HostGroup&) = delete;
  HostGroup& operator=(const HostGroup&) = delete;

  int size() const { return size_; }
  // Both ranks must be local. Made on first use; thread-safe.
  Link& link(int from, int to);
  // Links made so far (for tests of the memory a group takes).
  int links_made() const { return links_made_.load(); }
  Notifier& notifier() { return notifier_; }
  const std::atomic<bool>& aborted() const { return aborted_; }

  // Sets the abort flag; the first reason wins. Wakes every waiter.
  void Abort(const std::string& reason);
  std::string abort_reason() const;

  // Rank `rank` destroyed its communicator: waits on it fail at once.
  void MarkGone(int rank);
  bool gone(int rank) const {
    return gone_[rank].load(std::memory_order_acquire);
  }

  // Rank `rank` started call number `seq` (for timeout messages).
  void MarkStarted(int rank, uint64_t seq) {
    started_[rank].seq.store(static_cast<int64_t>(seq),
                             std::memory_order_relaxed);
  }
  // The last call number `rank` started, or -1.
  int64_t last_started(int rank) const {
    return started_[rank].seq.load(std::memory_order_relaxed);
  }

 private:
  const int size_;
  std::vector<bool> local_;
  // Owned; null until first use. Freed by the destructor.
  std::unique_ptr<std::atomic<Link*>[]> links_;
  std::atomic<int> links_made_{0};
  Notifier notifier_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex reason_mu_;
  std::string reason_;
  // One cache line per rank: every call writes its own entry.
  struct alignas(64) Progress {
    std::atomic<int64_t> seq{-1};
  };
  std::unique_ptr<Progress[]> started_;
  std::unique_ptr<std::atomic<bool>[]> gone_;
};

}  // namespace ringlet::collectives::host

#endif  // RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_GROUP_H_
