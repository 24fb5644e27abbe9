#include "collectives/transport/tcp/tcp_transport.h"

#include <string>
#include <utility>

#include "collectives/api/collective_error.h"

namespace ringlet::collectives::tcp {

TcpTransport::TcpTransport(std::shared_ptr<host::HostGroup> group, int rank,
                           std::vector<std::unique_ptr<TcpLink>> links,
                           std::shared_ptr<const JobHealth> health)
    : CrossProcessTransport(std::move(group), rank),
      links_(std::move(links)),
      health_(std::move(health)) {
  links_.resize(size());
}

GiveUp TcpTransport::Aborted() {
  return [this] {
    return group().aborted().load(std::memory_order_acquire) ||
           (health_ != nullptr && health_->failed());
  };
}

void TcpTransport::FailOn(const std::string& what) {
  ThrowIfAborted();  // Another local rank failed first: its reason wins.
  if (health_ != nullptr && health_->failed()) {
    Fail("rank " + std::to_string(rank()) + " " + Describe(call()) + ": " +
         health_->reason());
  }
  const bool timed_out = Clock::now() >= deadline_;
  Fail("rank " + std::to_string(rank()) + " " + Describe(call()) + ": " + what +
       (timed_out ? " after " + std::to_string(timeout_.count()) + " ms" : ""));
}

void TcpTransport::BeginCall(const CallDesc& call,
                             std::chrono::milliseconds timeout) {
  CrossProcessTransport::BeginCall(call, timeout);
  timeout_ = timeout;
  deadline_ = Clock::now() + timeout;
}

void TcpTransport::SendRemote(int peer, const Envelope& envelope,
                              const void* src, size_t bytes) {
  links_[peer]->Send(envelope, src, bytes);
}

void TcpTransport::ReadHeader(int peer, Envelope* envelope, uint64_t* bytes) {
  try {
    const WireHeader header = links_[peer]->ReadHeader(deadline_, Aborted());
    *envelope = header.envelope;
    *bytes = header.bytes;
  } catch (const CollectiveError& e) {
    FailOn(e.what());
  }
}

void TcpTransport::ReadPayload(int peer, void* dst, size_t bytes) {
  try {
    links_[peer]->ReadPayload(dst, bytes, deadline_, Aborted());
  } catch (const CollectiveError& e) {
    FailOn(e.what());
  }
}

void TcpTransport::WaitSends() {
  CrossProcessTransport::WaitSends();
  for (int peer = 0; peer < size(); ++peer) {
    if (IsLocal(peer)) continue;
    try {
      links_[peer]->WaitSent(deadline_, Aborted());
    } catch (const CollectiveError& e) {
      FailOn(e.what());
    }
  }
}

void TcpTransport::LeaveFailedCall() {
  CrossProcessTransport::LeaveFailedCall();
  // The group's reason (the first failure, maybe another rank's) goes to
  // every remote peer, and our links close: no peer waits for its deadline.
  const std::string reason = group().abort_reason();
  for (std::unique_ptr<TcpLink>& link : links_) {
    if (link != nullptr) link->Abandon(reason);
  }
}

}  // namespace ringlet::collectives::tcp
