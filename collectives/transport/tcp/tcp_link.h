// One rank's connection to one rank of another process, for one
// communicator group: messages in both directions, each a fixed header
// (the envelope, the payload's size) and the payload.
//
// A send goes straight to the socket while the link is idle and the
// socket takes it whole (small messages: no thread hand-off in their
// latency); what it does not take is queued and written by the link's own
// thread, so a rank never waits on a peer's reading while it has messages
// of its own to receive (as MPI's progress engine makes Isend progress):
// the ring cannot deadlock on full socket buffers. The caller's payload is
// read in place until WaitSent() returns. Receives are made by the rank's
// own thread.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_TCP_TCP_LINK_H_
#define RINGLET_COLLECTIVES_TRANSPORT_TCP_TCP_LINK_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "collectives/transport/call_desc.h"
#include "collectives/transport/tcp/socket.h"

namespace ringlet::collectives::tcp {

struct WireHeader {
  static constexpr uint32_t kMagic = 0x52494e47;  // "RING"
  enum Kind : uint32_t { kMessage = 1, kAbort = 2 };
  uint32_t magic = kMagic;
  uint32_t kind = kMessage;
  Envelope envelope;
  uint64_t bytes = 0;  // The payload's (kAbort: the reason's length).
};

class TcpLink {
 public:
  // `peer` names the other end in errors ("rank 3 (process 1, host h)").
  TcpLink(Socket socket, std::string peer);
  // Ends the sender thread; messages already written still arrive.
  ~TcpLink();
  TcpLink(const TcpLink&) = delete;
  TcpLink& operator=(const TcpLink&) = delete;

  const std::string& peer() const { return peer_; }

  // Queues a message; `src` must stay valid until WaitSent() returns.
  void Send(const Envelope& envelope, const void* src, size_t bytes);
  // Returns once every queued message is written (our buffers are free);
  // throws CollectiveError at `deadline`, on give_up, or with the sender's
  // error (the peer closed the connection).
  void WaitSent(Clock::time_point deadline, const GiveUp& give_up);

  // The next message's header (an abort from the peer becomes a
  // CollectiveError with its reason), then its payload.
  WireHeader ReadHeader(Clock::time_point deadline, const GiveUp& give_up);
  void ReadPayload(void* dst, size_t bytes, Clock::time_point deadline,
                   const GiveUp& give_up);

  // After a failed call: drops what is not yet sent, tells the peer why
  // (when the stream is at a message boundary) and closes both directions,
  // so the peer fails at once instead of at its deadline. Returns once the
  // sender thread no longer reads the caller's memory.
  void Abandon(const std::string& reason);

 private:
  struct Pending {
    WireHeader header;
    const void* payload = nullptr;
    size_t sent = 0;  // Of the header and payload, written already.
  };
  void SendLoop();

  Socket socket_;
  const std::string peer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;  // Front: being written.
  bool writing_ = false;
  bool stopping_ = false;
  bool abandoned_ = false;
  bool broken_ = false;  // A write stopped mid-message.
  std::string error_;    // The sender's first error.
  std::thread sender_;
};

}  // namespace ringlet::collectives::tcp

#endif  // RINGLET_COLLECTIVES_TRANSPORT_TCP_TCP_LINK_H_
