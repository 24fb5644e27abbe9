// TCP sockets for the transport and the rendezvous: an owned descriptor,
// and reads, writes, connects and accepts that each end by a deadline or
// when the caller gives up, never blocking forever.
//
// Every failure is a CollectiveError whose message says what was being
// done and with whom ("connecting to 10.0.0.1:29500 (process 0)"), in the
// system's words (strerror). A peer that closed its end is named as such:
// at the other end of a socket, that is what a process's death looks like.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_TCP_SOCKET_H_
#define RINGLET_COLLECTIVES_TRANSPORT_TCP_SOCKET_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace ringlet::collectives::tcp {

using Clock = std::chrono::steady_clock;

// Returns true when a wait should stop early (the group was aborted).
using GiveUp = std::function<bool()>;

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { Close(); }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // A socket listening on every interface at `port` (0: one the system
  // picks), SO_REUSEADDR set so a restarted job can take its port again.
  static Socket Listen(int port);
  // Connects to host:port, trying again while nobody listens there yet (the
  // peer may start later) until `deadline`. `who` names the peer in errors.
  static Socket Connect(const std::string& host, int port,
                        Clock::time_point deadline, const std::string& who);

  // The next connection on a listening socket, by `deadline`.
  Socket Accept(Clock::time_point deadline, const GiveUp& give_up,
                const std::string& what) const;

  // Writes or reads exactly `bytes`; `who` names the peer in errors. A
  // read that finds the connection closed says the peer closed it.
  void WriteAll(const void* data, size_t bytes, Clock::time_point deadline,
                const GiveUp& give_up, const std::string& who) const;
  void ReadAll(void* data, size_t bytes, Clock::time_point deadline,
               const GiveUp& give_up, const std::string& who) const;

  // Writes what the socket takes now, without waiting; returns how many
  // bytes that was (0 when its buffer is full).
  size_t TryWrite(const void* data, size_t bytes, const std::string& who) const;

  // The port this socket is bound to; the peer's numeric address.
  int LocalPort() const;
  std::string PeerAddress() const;

  // Ends both directions at once: the peer's reads see the end, and a
  // thread of ours blocked on this socket wakes. The descriptor stays
  // open until Close() (so no other socket takes its number meanwhile).
  void Shutdown() const;
  // Ends our direction only: the peer reads what was sent, then the end.
  void ShutdownWrites() const;
  void Close();

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }

 private:
  // Waits until the socket is readable (or writable); false on give_up.
  void WaitReady(bool for_write, Clock::time_point deadline,
                 const GiveUp& give_up, const std::string& what) const;

  int fd_ = -1;
};

// How long until `deadline`, as a poll(2) timeout, at most `slice_ms` so
// that waits look at their give_up condition that often.
int PollTimeoutMs(Clock::time_point deadline, int slice_ms);

// True for a numeric IPv4 address in 127.0.0.0/8: a peer on this host that
// came over loopback, which another host cannot reach at that address.
bool IsLoopbackAddress(const std::string& numeric);

}  // namespace ringlet::collectives::tcp

#endif  // RINGLET_COLLECTIVES_TRANSPORT_TCP_SOCKET_H_
