// A transport for ranks spread over processes: peers in this process are
// reached through host memory (HostTransport, unchanged), peers in other
// processes through the messages a derived class moves (MPI's, TCP's). Each
// remote message is a header (the envelope, the payload's size) and then
// the payload; this class checks every header against the receiver's own
// call before the payload is read, so ranks that make different calls get
// a CollectiveError naming both, never a misread payload, whatever carries
// the bytes.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_HOST_CROSS_PROCESS_TRANSPORT_H_
#define RINGLET_COLLECTIVES_TRANSPORT_HOST_CROSS_PROCESS_TRANSPORT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/transport/host/host_transport.h"

namespace ringlet::collectives::host {

class CrossProcessTransport : public HostTransport {
 public:
  using HostTransport::HostTransport;

  void Send(int peer, const Envelope& envelope, const void* src,
            size_t bytes) final;
  void RecvReduce(int peer, const Envelope& expected, void* dst,
                  const void* local, size_t count, DataType type, ReduceOp op,
                  bool finish) final;
  void RecvCombine(
      int peer, const Envelope& expected, size_t bytes,
      const std::function<void(const void* message)>& combine) final;
  void RecvCopy(int peer, const Envelope& expected, void* dst,
                size_t bytes) final;

 protected:
  // Whether `peer` lives in this process.
  virtual bool IsLocal(int peer) const = 0;
  // Starts sending a message to a peer in another process; `src` stays
  // valid until WaitSends() returns.
  virtual void SendRemote(int peer, const Envelope& envelope, const void* src,
                          size_t bytes) = 0;
  // Waits for the next header from a peer in another process (or fails
  // the call, by its deadline).
  virtual void ReadHeader(int peer, Envelope* envelope, uint64_t* bytes) = 0;
  // Reads that message's payload into dst.
  virtual void ReadPayload(int peer, void* dst, size_t bytes) = 0;

 private:
  // Reads `peer`'s next header and checks it against `expected`.
  void RecvHeader(int peer, const Envelope& expected, size_t bytes);

  std::vector<char> staging_;  // Payloads that are reduced into place.
};

}  // namespace ringlet::collectives::host

#endif  // RINGLET_COLLECTIVES_TRANSPORT_HOST_CROSS_PROCESS_TRANSPORT_H_
