// The transport between ranks that are threads of one process, with buffers
// in host memory. Zero copy: a Send posts the address of the sender's chunk
// and the receiver combines straight out of it, so a chunk crosses memory
// once. bytes_sent() still counts every payload byte sent, which is what a
// transport with real links would put on the wire.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_TRANSPORT_H_
#define RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_TRANSPORT_H_

#include <memory>

#include "collectives/transport/host/link_endpoint.h"

namespace ringlet::collectives::host {

class HostTransport : public LinkEndpoint {
 public:
  // Calls whose buffers are at least this large write with streaming stores.
  static constexpr size_t kStreamingBytes = size_t{8} << 20;

  HostTransport(std::shared_ptr<HostGroup> group, int rank);

  void BeginCall(const CallDesc& call,
                 std::chrono::milliseconds timeout) override;
  void Send(int peer, const Envelope& envelope, const void* src,
            size_t bytes) override;
  void RecvReduce(int peer, const Envelope& expected, void* dst,
                  const void* local, size_t count, DataType type, ReduceOp op,
                  bool finish) override;
  void RecvCombine(
      int peer, const Envelope& expected, size_t bytes,
      const std::function<void(const void* message)>& combine) override;
  void RecvCopy(int peer, const Envelope& expected, void* dst,
                size_t bytes) override;
  void CopyLocal(void* dst, const void* src, size_t bytes) override;
  void* Scratch(size_t bytes) override;

 private:
  bool streaming_ = false;
  std::unique_ptr<char[]> scratch_;
  size_t scratch_bytes_ = 0;
};

}  // namespace ringlet::collectives::host

#endif  // RINGLET_COLLECTIVES_TRANSPORT_HOST_HOST_TRANSPORT_H_
