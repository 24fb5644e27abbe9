#include "collectives/transport/host/link_endpoint.h"

#include <cstring>

#include "collectives/api/collective_error.h"

namespace ringlet::collectives::host {

LinkEndpoint::LinkEndpoint(std::shared_ptr<HostGroup> group, int rank)
    : group_(std::move(group)), rank_(rank), must_consume_(group_->size(), 0) {}

LinkEndpoint::~LinkEndpoint() {
  // Peers waiting on this rank must fail, not hang; peers that need nothing
  // more from it (the usual end of a program) are not disturbed.
  group_->MarkGone(rank_);
}

std::string LinkEndpoint::Me() const {
  return "rank " + std::to_string(rank_) + " " + Describe(call_);
}

void LinkEndpoint::Fail(const std::string& message) {
  group_->Abort(message);
  throw CollectiveError(message);
}

template <typename Ready>
void LinkEndpoint::WaitFor(Ready&& ready, const char* what, int peer) {
  const WaitResult result = group_->notifier().Wait(
      ready,
      [&] {
        return group_->aborted().load(std::memory_order_acquire) ||
               group_->gone(peer);
      },
      deadline_);
  if (result == WaitResult::kReady) return;
  if (result == WaitResult::kAborted) {
    if (group_->aborted().load(std::memory_order_acquire)) {
      throw CollectiveError(group_->abort_reason());
    }
    Fail(Me() + ": rank " + std::to_string(peer) +
         " has destroyed its communicator");
  }
  const int64_t peer_seq = group_->last_started(peer);
  const std::string peer_state =
      peer_seq < 0 ? "it has made no call yet"
                   : "its last call started is #" + std::to_string(peer_seq);
  Fail(Me() + ": timed out after " + std::to_string(timeout_.count()) +
       " ms waiting for rank " + std::to_string(peer) + " " + what + " (" +
       peer_state + ")");
}

const Message& LinkEndpoint::Await(int peer, const Envelope& expected,
                                   size_t bytes) {
  Link& link = group_->link(peer, rank_);
  const uint64_t next = link.consumed.load(std::memory_order_relaxed);
  WaitFor([&] { return link.posted.load(std::memory_order_acquire) > next; },
          "to send", peer);
  // Reading starts only while the group is not aborted: with both stores
  // before the other's load (sequentially consistent), either this rank
  // sees the abort and reads nothing, or the sender leaving a failed call
  // sees `reading` and waits for the release (LeaveFailedCall).
  link.reading.store(1, std::memory_order_seq_cst);
  if (group_->aborted().load(std::memory_order_seq_cst)) {
    StopReading(link);
    throw CollectiveError(group_->abort_reason());
  }
  const Message& message = link.slots[next % Link::kCapacity];
  const Envelope& got = message.envelope;
  if (got.call != expected.call) {
    StopReading(link);
    Fail("rank " + std::to_string(peer) + " " + Describe(got.call) +
         " does not match rank " + std::to_string(rank_) + " " +
         Describe(expected.call));
  }
  if (got.step != expected.step || got.segment != expected.segment ||
      message.bytes != bytes) {
    StopReading(link);
    Fail(Me() + ": internal error: message from rank " + std::to_string(peer) +
         " is step " + std::to_string(got.step) + " segment " +
         std::to_string(got.segment) + " of " + std::to_string(message.bytes) +
         " bytes, expected step " + std::to_string(expected.step) +
         " segment " + std::to_string(expected.segment) + " of " +
         std::to_string(bytes));
  }
  return message;
}

void LinkEndpoint::Release(int peer) {
  Link& link = group_->link(peer, rank_);
  link.consumed.store(link.consumed.load(std::memory_order_relaxed) + 1,
                      std::memory_order_seq_cst);
  StopReading(link);
}

void LinkEndpoint::StopReading(Link& link) {
  link.reading.store(0, std::memory_order_seq_cst);
  group_->notifier().NotifyAll();
}

void LinkEndpoint::LeaveFailedCall() {
  group_->Abort(Me() + " failed");  // The first reason wins.
  // Ordered after the abort this rank saw, whoever wrote it (see Await).
  (void)group_->aborted().load(std::memory_order_seq_cst);
  // After the abort no peer starts a read; one in progress is a copy or a
  // combine of one chunk. The deadline bounds the wait should a peer's
  // thread stop making progress.
  const Clock::time_point until = Clock::now() + std::chrono::seconds(60);
  for (int peer = 0; peer < size(); ++peer) {
    if (must_consume_[peer] == 0) continue;
    Link& link = group_->link(rank_, peer);
    group_->notifier().Wait(
        [&] { return link.reading.load(std::memory_order_seq_cst) == 0; },
        [&] { return group_->gone(peer); }, until);
    must_consume_[peer] = 0;
  }
}

void LinkEndpoint::WaitSends() {
  for (int peer = 0; peer < size(); ++peer) {
    const uint64_t target = must_consume_[peer];
    if (target == 0) continue;
    Link& link = group_->link(rank_, peer);
    WaitFor(
        [&] { return link.consumed.load(std::memory_order_acquire) >= target; },
        "to receive what this rank sent", peer);
    must_consume_[peer] = 0;
  }
}

void LinkEndpoint::Abort(const std::string& reason) { group_->Abort(reason); }

void LinkEndpoint::ThrowIfAborted() const {
  if (group_->aborted().load(std::memory_order_acquire)) {
    throw CollectiveError("communicator was aborted: " +
                          group_->abort_reason());
  }
}

void LinkEndpoint::BeginCall(const CallDesc& call,
                             std::chrono::milliseconds timeout) {
  call_ = call;
  timeout_ = timeout;
  deadline_ = Clock::now() + timeout;
  group_->MarkStarted(rank_, call.seq);
}

void LinkEndpoint::Post(int peer, const Envelope& envelope, const void* src,
                        size_t bytes, bool copy_inline) {
  Link& link = group_->link(rank_, peer);
  const uint64_t posted = link.posted.load(std::memory_order_relaxed);
  // Algorithms keep a call's messages per link under the capacity, so this
  // wait only ever passes at once; it is here so that can never corrupt.
  WaitFor(
      [&] {
        return posted - link.consumed.load(std::memory_order_acquire) <
               Link::kCapacity;
      },
      "to drain its queue", peer);
  Message& slot = link.slots[posted % Link::kCapacity];
  slot.envelope = envelope;
  slot.bytes = bytes;
  if (copy_inline && bytes <= Message::kInlineBytes) {
    if (bytes > 0) std::memcpy(slot.inline_data, src, bytes);
    slot.data = slot.inline_data;
  } else {
    slot.data = src;
    must_consume_[peer] = posted + 1;
  }
  link.posted.store(posted + 1, std::memory_order_seq_cst);
  group_->notifier().NotifyAll();
  bytes_sent_ += bytes;
  ++messages_sent_;
}

}  // namespace ringlet::collectives::host
