// One rank's end of the in-process mailboxes (see host_group.h): posting
// and awaiting messages, envelope checks, deadlines, abort and statistics.
//
// Transports whose ranks live in one process derive from it and add what
// moving and combining the payload means for their memory: HostTransport
// (host memory), cuda::CudaTransport (GPU memory). Payloads travel by
// address; the receiver reads them in place.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_HOST_LINK_ENDPOINT_H_
#define RINGLET_COLLECTIVES_TRANSPORT_HOST_LINK_ENDPOINT_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "collectives/transport/host/host_group.h"
#include "collectives/transport/transport.h"

namespace ringlet::collectives::host {

class LinkEndpoint : public Transport {
 public:
  LinkEndpoint(std::shared_ptr<HostGroup> group, int rank);
  // Marks this rank gone: peers waiting on it fail instead of hanging.
  ~LinkEndpoint() override;

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  void BeginCall(const CallDesc& call,
                 std::chrono::milliseconds timeout) override;
  size_t max_messages_per_link() const override { return Link::kCapacity; }
  void WaitSends() override;
  void LeaveFailedCall() override;
  void Abort(const std::string& reason) override;
  void ThrowIfAborted() const override;
  uint64_t bytes_sent() const override { return bytes_sent_; }
  uint64_t messages_sent() const override { return messages_sent_; }

 protected:
  // Posts a message to `peer`. With `copy_inline` and at most
  // Message::kInlineBytes, the payload is copied into the message (host
  // memory only), and the sender's buffer is free at once.
  void Post(int peer, const Envelope& envelope, const void* src, size_t bytes,
            bool copy_inline);
  // Waits for `peer`'s next message and checks it against `expected`.
  const Message& Await(int peer, const Envelope& expected, size_t bytes);
  // Marks `peer`'s current message read, so the sender may reuse its memory.
  void Release(int peer);
  // Ends this rank's read of a message on `link` (Await began it).
  void StopReading(Link& link);
  // Aborts the group with `message` and throws it.
  [[noreturn]] void Fail(const std::string& message);

  // Counts a message this rank sent by other means (another transport).
  void CountSent(size_t bytes) {
    bytes_sent_ += bytes;
    ++messages_sent_;
  }

  const CallDesc& call() const { return call_; }
  HostGroup& group() { return *group_; }

 private:
  template <typename Ready>
  void WaitFor(Ready&& ready, const char* what, int peer);
  std::string Me() const;

  std::shared_ptr<HostGroup> group_;
  const int rank_;
  CallDesc call_;
  Clock::time_point deadline_;
  std::chrono::milliseconds timeout_{0};
  // Per peer: how many of our messages on that link must be consumed
  // before our buffers are free (inline messages do not count).
  std::vector<uint64_t> must_consume_;
  uint64_t bytes_sent_ = 0;
  uint64_t messages_sent_ = 0;
};

}  // namespace ringlet::collectives::host

#endif  // RINGLET_COLLECTIVES_TRANSPORT_HOST_LINK_ENDPOINT_H_
