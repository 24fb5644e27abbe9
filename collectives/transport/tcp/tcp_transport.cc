#include "collectives/transport/tcp/tcp_transport.h"

#include <string>
#include <utility>

#include "collectives/api/collective_error.h"
#include "collectives/transport/host/host_kernels.h"

namespace ringlet::collectives::tcp {

TcpTransport::TcpTransport(std::shared_ptr<host::HostGroup> group, int rank,
                           std::vector<std::unique_ptr<TcpLink>> links)
    : HostTransport(std::move(group), rank), links_(std::move(links)) {
  links_.resize(size());
}

GiveUp TcpTransport::Aborted() {
  return [this] { return group().aborted().load(std::memory_order_acquire); };
}

void TcpTransport::FailOn(const std::string& what) {
  ThrowIfAborted();  // Another local rank failed first: its reason wins.
  const bool timed_out = Clock::now() >= deadline_;
  Fail("rank " + std::to_string(rank()) + " " + Describe(call()) + ": " + what +
       (timed_out ? " after " + std::to_string(timeout_.count()) + " ms" : ""));
}

void TcpTransport::BeginCall(const CallDesc& call,
                             std::chrono::milliseconds timeout) {
  HostTransport::BeginCall(call, timeout);
  timeout_ = timeout;
  deadline_ = Clock::now() + timeout;
}

void TcpTransport::Send(int peer, const Envelope& envelope, const void* src,
                        size_t bytes) {
  if (IsLocal(peer)) {
    HostTransport::Send(peer, envelope, src, bytes);
    return;
  }
  links_[peer]->Send(envelope, src, bytes);
  CountSent(bytes);
}

void TcpTransport::RecvHeader(int peer, const Envelope& expected,
                              size_t bytes) {
  WireHeader header;
  try {
    header = links_[peer]->ReadHeader(deadline_, Aborted());
  } catch (const CollectiveError& e) {
    FailOn(e.what());
  }
  const Envelope& got = header.envelope;
  if (got.call != expected.call) {
    Fail("rank " + std::to_string(peer) + " " + Describe(got.call) +
         " does not match rank " + std::to_string(rank()) + " " +
         Describe(expected.call));
  }
  if (got.step != expected.step || got.segment != expected.segment ||
      header.bytes != bytes) {
    Fail("rank " + std::to_string(rank()) + " " + Describe(call()) +
         ": internal error: message from rank " + std::to_string(peer) +
         " is step " + std::to_string(got.step) + " segment " +
         std::to_string(got.segment) + " of " + std::to_string(header.bytes) +
         " bytes, expected step " + std::to_string(expected.step) +
         " segment " + std::to_string(expected.segment) + " of " +
         std::to_string(bytes));
  }
}

void TcpTransport::RecvPayload(int peer, void* dst, size_t bytes) {
  try {
    links_[peer]->ReadPayload(dst, bytes, deadline_, Aborted());
  } catch (const CollectiveError& e) {
    FailOn(e.what());
  }
}

void TcpTransport::RecvReduce(int peer, const Envelope& expected, void* dst,
                              const void* local, size_t count, DataType type,
                              ReduceOp op, bool finish) {
  if (IsLocal(peer)) {
    HostTransport::RecvReduce(peer, expected, dst, local, count, type, op,
                              finish);
    return;
  }
  const size_t bytes = count * SizeOf(type);
  RecvHeader(peer, expected, bytes);
  if (staging_.size() < bytes) staging_.resize(bytes);
  RecvPayload(peer, staging_.data(), bytes);
  host::CombineInto(dst, local, staging_.data(), count, type, op,
                    finish && op == ReduceOp::kAvg ? size() : 0,
                    /*streaming=*/false);
}

void TcpTransport::RecvCombine(
    int peer, const Envelope& expected, size_t bytes,
    const std::function<void(const void* message)>& combine) {
  if (IsLocal(peer)) {
    HostTransport::RecvCombine(peer, expected, bytes, combine);
    return;
  }
  RecvHeader(peer, expected, bytes);
  if (staging_.size() < bytes) staging_.resize(bytes);
  RecvPayload(peer, staging_.data(), bytes);
  combine(staging_.data());
}

void TcpTransport::RecvCopy(int peer, const Envelope& expected, void* dst,
                            size_t bytes) {
  if (IsLocal(peer)) {
    HostTransport::RecvCopy(peer, expected, dst, bytes);
    return;
  }
  RecvHeader(peer, expected, bytes);
  RecvPayload(peer, dst, bytes);
}

void TcpTransport::WaitSends() {
  HostTransport::WaitSends();
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
  HostTransport::LeaveFailedCall();
  // The group's reason (the first failure, maybe another rank's) goes to
  // every remote peer, and our links close: no peer waits for its deadline.
  const std::string reason = group().abort_reason();
  for (std::unique_ptr<TcpLink>& link : links_) {
    if (link != nullptr) link->Abandon(reason);
  }
}

}  // namespace ringlet::collectives::tcp
