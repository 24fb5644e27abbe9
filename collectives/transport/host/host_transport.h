// The transport between ranks that are threads of one process, with buffers
// in host memory. Zero copy: a Send posts the address of the sender's chunk
// and the receiver combines straight out of it, so a chunk crosses memory
// once. bytes_sent() still counts every payload byte sent, which is what a
// transport with real links would put on the wire.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_TRANSPORT_H_
#define RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_TRANSPORT_H_

#include <memory>
#include <string>
#include <vector>

#include "collectives/transport/host/host_group.h"
#include "collectives/transport/transport.h"

namespace ringlet::collectives::host {

class HostTransport : public Transport {
 public:
  // Calls whose buffers are at least this large write with streaming stores.
  static constexpr size_t kStreamingBytes = size_t{8} << 20;

  HostTransport(std::shared_ptr<HostGroup> group, int rank);
  ~HostTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }

  void BeginCall(const CallDesc& call,
                 std::chrono::milliseconds timeout) override;
  void Send(int peer, const Envelope& envelope, const void* src,
            size_t bytes) override;
  void RecvReduce(int peer, const Envelope& expected, void* dst,
                  const void* local, size_t count, DataType type, ReduceOp op,
                  bool finish) override;
  void RecvCopy(int peer, const Envelope& expected, void* dst,
                size_t bytes) override;
  void CopyLocal(void* dst, const void* src, size_t bytes) override;
  void* Scratch(size_t bytes) override;
  size_t max_messages_per_link() const override { return Link::kCapacity; }
  void WaitSends() override;
  void Abort(const std::string& reason) override;
  void ThrowIfAborted() const override;
  uint64_t bytes_sent() const override { return bytes_sent_; }
  uint64_t messages_sent() const override { return messages_sent_; }

 private:
  // Waits for `peer`'s next message and checks it against `expected`.
  const Message& Await(int peer, const Envelope& expected, size_t bytes);
  // Marks `peer`'s current message read, so the sender may reuse its memory.
  void Release(int peer);
  // Waits for `ready`; throws (after aborting the group on a timeout) when
  // it does not come. `what` and `peer` describe the wait for messages.
  template <typename Ready>
  void WaitFor(Ready&& ready, const char* what, int peer);
  [[noreturn]] void Fail(const std::string& message);
  std::string Me() const;

  std::shared_ptr<HostGroup> group_;
  const int rank_;
  CallDesc call_;
  Clock::time_point deadline_;
  std::chrono::milliseconds timeout_{0};
  bool streaming_ = false;
  // Per peer: how many of our messages on that link must be consumed
  // before our buffers are free (inline messages do not count).
  std::vector<uint64_t> must_consume_;
  std::unique_ptr<char[]> scratch_;
  size_t scratch_bytes_ = 0;
  uint64_t bytes_sent_ = 0;
  uint64_t messages_sent_ = 0;
};

}  // namespace ringlet::collectives::host

#endif  // RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_TRANSPORT_H_
