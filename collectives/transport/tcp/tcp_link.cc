#include "collectives/transport/tcp/tcp_link.h"

#include <utility>
#include <vector>

#include "collectives/api/collective_error.h"

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#endif

namespace ringlet::collectives::tcp {
namespace {

// The payload's reads inside send() are ordered before the caller's next
// writes to that memory by causality through the network (the peer's reply
// needs our bytes) or by WaitSent(); ThreadSanitizer sees neither the
// first nor the kernel's copy, and would report those writes as races.
// Its other checks stay on this thread; ASan still checks the reads.
class IgnorePayloadReads {
 public:
#if defined(__SANITIZE_THREAD__)
  IgnorePayloadReads() { __tsan_ignore_thread_begin(); }
  ~IgnorePayloadReads() { __tsan_ignore_thread_end(); }
#endif
};

// The sender thread's writes have no deadline of their own: the rank
// waiting in WaitSent() has one, and abandons the link when it passes.
constexpr auto kNoDeadline = std::chrono::hours(24 * 365);

// An abort's reason is cut to this length on the wire.
constexpr size_t kMaxReason = 4096;

}  // namespace

TcpLink::TcpLink(Socket socket, std::string peer)
    : socket_(std::move(socket)), peer_(std::move(peer)) {
  sender_ = std::thread([this] { SendLoop(); });
}

TcpLink::~TcpLink() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    // Messages still unsent belong to a failed call (a finished one waited
    // for them): a peer that stopped reading must not hold us here.
    if (writing_ || !queue_.empty()) {
      abandoned_ = true;
      queue_.clear();
      socket_.Shutdown();
    }
  }
  cv_.notify_all();
  sender_.join();
}

void TcpLink::Send(const Envelope& envelope, const void* src, size_t bytes) {
  Pending pending;
  pending.header.envelope = envelope;
  pending.header.bytes = bytes;
  pending.payload = src;
  std::unique_lock<std::mutex> lock(mu_);
  if (abandoned_) return;  // The call has failed; WaitSent says so.
  if (queue_.empty() && !writing_ && error_.empty()) {
    writing_ = true;  // The sender thread stays off the socket meanwhile.
    lock.unlock();
    std::string error;
    try {
      pending.sent =
          socket_.TryWrite(&pending.header, sizeof(pending.header), peer_);
      if (pending.sent == sizeof(pending.header) && bytes > 0) {
        pending.sent += socket_.TryWrite(src, bytes, peer_);
      }
    } catch (const CollectiveError& e) {
      error = e.what();
    }
    lock.lock();
    writing_ = false;
    if (!error.empty()) {
      error_ = error;
      broken_ = pending.sent > 0;
      cv_.notify_all();
      return;
    }
    if (pending.sent == sizeof(pending.header) + bytes) return;
  }
  queue_.push_back(pending);
  lock.unlock();
  cv_.notify_all();
}

void TcpLink::SendLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // Stopping with nothing left to send.
    const Pending pending = queue_.front();
    writing_ = true;
    lock.unlock();
    std::string error;
    const GiveUp give_up = [this] {
      std::lock_guard<std::mutex> l(mu_);
      return abandoned_;
    };
    try {
      const Clock::time_point deadline = Clock::now() + kNoDeadline;
      constexpr size_t kHeader = sizeof(WireHeader);
      size_t done = pending.sent;  // The part Send() wrote itself.
      if (done < kHeader) {
        socket_.WriteAll(reinterpret_cast<const char*>(&pending.header) + done,
                         kHeader - done, deadline, give_up, peer_);
        done = kHeader;
      }
      if (done - kHeader < pending.header.bytes) {
        [[maybe_unused]] IgnorePayloadReads ignore;
        socket_.WriteAll(
            static_cast<const char*>(pending.payload) + (done - kHeader),
            pending.header.bytes - (done - kHeader), deadline, give_up, peer_);
      }
    } catch (const CollectiveError& e) {
      error = e.what();
    }
    lock.lock();
    writing_ = false;
    if (!error.empty()) {
      if (error_.empty()) error_ = error;
      broken_ = true;
      queue_.clear();
    } else if (!queue_.empty()) {
      queue_.pop_front();
    }
    cv_.notify_all();
  }
}

void TcpLink::WaitSent(Clock::time_point deadline, const GiveUp& give_up) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (!error_.empty()) throw CollectiveError(error_);
    if (queue_.empty() && !writing_) return;
    if (give_up && give_up()) {
      throw CollectiveError("sending to " + peer_ +
                            ": given up (the group was aborted)");
    }
    if (Clock::now() >= deadline) {
      throw CollectiveError("timed out waiting for " + peer_ +
                            " to receive what this rank sent");
    }
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

WireHeader TcpLink::ReadHeader(Clock::time_point deadline,
                               const GiveUp& give_up) {
  WireHeader header;
  socket_.ReadAll(&header, sizeof(header), deadline, give_up, peer_);
  if (header.magic != WireHeader::kMagic) {
    throw CollectiveError("a message from " + peer_ +
                          " is not ringlet's (wrong magic number): is "
                          "another program on that port?");
  }
  if (header.kind == WireHeader::kAbort) {
    std::string reason(std::min<uint64_t>(header.bytes, kMaxReason), '\0');
    try {
      socket_.ReadAll(reason.data(), reason.size(), deadline, give_up, peer_);
    } catch (const CollectiveError&) {
      reason = "(its reason was cut off)";
    }
    throw CollectiveError(peer_ + " failed: " + reason);
  }
  return header;
}

void TcpLink::ReadPayload(void* dst, size_t bytes, Clock::time_point deadline,
                          const GiveUp& give_up) {
  socket_.ReadAll(dst, bytes, deadline, give_up, peer_);
}

void TcpLink::Abandon(const std::string& reason) {
  std::unique_lock<std::mutex> lock(mu_);
  if (abandoned_) return;
  abandoned_ = true;
  // A write in progress stops within one poll slice (its give_up).
  cv_.wait(lock, [&] { return !writing_; });
  const bool at_boundary = !broken_;
  queue_.clear();
  lock.unlock();
  if (at_boundary) {
    WireHeader header;
    header.kind = WireHeader::kAbort;
    const std::string text = reason.substr(0, kMaxReason);
    header.bytes = text.size();
    try {
      const Clock::time_point deadline =
          Clock::now() + std::chrono::milliseconds(200);
      socket_.WriteAll(&header, sizeof(header), deadline, nullptr, peer_);
      socket_.WriteAll(text.data(), text.size(), deadline, nullptr, peer_);
    } catch (const CollectiveError&) {
      // The peer will see the connection close instead.
    }
  }
  socket_.ShutdownWrites();
}

}  // namespace ringlet::collectives::tcp
