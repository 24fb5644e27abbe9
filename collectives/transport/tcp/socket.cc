#include "collectives/transport/tcp/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "collectives/api/collective_error.h"

namespace ringlet::collectives::tcp {
namespace {

// How often a blocked wait looks at its give_up condition.
constexpr int kSliceMs = 50;
// Reads tried again before a read sleeps in poll().
constexpr int kSpins = 200;

[[noreturn]] void Throw(const std::string& what, int error) {
  throw CollectiveError(what + ": " + std::strerror(error));
}

void SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    Throw("fcntl(O_NONBLOCK)", errno);
  }
}

// Small messages (headers, the latency of tiny allreduces) leave at once.
void SetNoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string Endpoint(const std::string& host, int port) {
  return host + ":" + std::to_string(port);
}

}  // namespace

int PollTimeoutMs(Clock::time_point deadline, int slice_ms) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - Clock::now())
                        .count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, slice_ms));
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::Shutdown() const {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void Socket::ShutdownWrites() const {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

Socket Socket::Listen(int port) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) Throw("socket()", errno);
  const int one = 1;
  setsockopt(s.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(s.fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
      0) {
    const int error = errno;
    throw CollectiveError(
        "cannot listen on port " + std::to_string(port) + ": " +
        std::strerror(error) +
        (error == EADDRINUSE
             ? " (another program, or an earlier job still ending, holds "
               "it; choose another MASTER_PORT)"
             : ""));
  }
  if (::listen(s.fd_, SOMAXCONN) != 0) Throw("listen()", errno);
  SetNonBlocking(s.fd_);
  return s;
}

Socket Socket::Connect(const std::string& host, int port,
                       Clock::time_point deadline, const std::string& who) {
  const std::string where = Endpoint(host, port) + " (" + who + ")";
  addrinfo hints{};
  hints.ai_family = AF_INET;  // Listen() takes IPv4's every interface.
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int code =
      getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (code != 0) {
    throw CollectiveError("cannot resolve " + where + ": " +
                          gai_strerror(code));
  }
  sockaddr_in address{};
  std::memcpy(&address, found->ai_addr,
              std::min<size_t>(sizeof(address), found->ai_addrlen));
  freeaddrinfo(found);
  int last_error = 0;
  while (true) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) Throw("socket()", errno);
    SetNonBlocking(s.fd_);
    int result = ::connect(s.fd_, reinterpret_cast<sockaddr*>(&address),
                           sizeof(address));
    if (result != 0 && errno == EINPROGRESS) {
      pollfd p{s.fd_, POLLOUT, 0};
      const int ready = ::poll(&p, 1, PollTimeoutMs(deadline, 1000));
      int error = 0;
      socklen_t length = sizeof(error);
      if (ready > 0 &&
          getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &error, &length) == 0) {
        result = error == 0 ? 0 : -1;
        errno = error;
      } else {
        result = -1;
        errno = ready == 0 ? ETIMEDOUT : errno;
      }
    }
    if (result == 0) {
      SetNoDelay(s.fd_);
      return s;
    }
    last_error = errno;
    // Refused: nobody listens yet. Anything else is as final.
    if (last_error != ECONNREFUSED && last_error != ETIMEDOUT &&
        last_error != ECONNRESET && last_error != EHOSTUNREACH) {
      Throw("cannot connect to " + where, last_error);
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw CollectiveError("nobody answered at " + where + " before the " +
                        "deadline (" + std::strerror(last_error) +
                        "): is that process running, and is the address "
                        "and port right?");
}

void Socket::WaitReady(bool for_write, Clock::time_point deadline,
                       const GiveUp& give_up, const std::string& what) const {
  while (true) {
    pollfd p{fd_, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
    const int ready = ::poll(&p, 1, PollTimeoutMs(deadline, kSliceMs));
    if (ready > 0) return;  // Ready, or an error the next call reports.
    if (ready < 0 && errno != EINTR) Throw("poll() " + what, errno);
    if (give_up && give_up()) {
      throw CollectiveError(what + ": given up (the group was aborted)");
    }
    if (Clock::now() >= deadline) {
      throw CollectiveError(what + ": timed out");
    }
  }
}

Socket Socket::Accept(Clock::time_point deadline, const GiveUp& give_up,
                      const std::string& what) const {
  while (true) {
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      Socket s(fd);
      SetNonBlocking(fd);
      SetNoDelay(fd);
      return s;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
        errno != ECONNABORTED) {
      Throw("accept() " + what, errno);
    }
    WaitReady(false, deadline, give_up, what);
  }
}

void Socket::WriteAll(const void* data, size_t bytes,
                      Clock::time_point deadline, const GiveUp& give_up,
                      const std::string& who) const {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd_, p, bytes, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      WaitReady(true, deadline, give_up, "sending to " + who);
      continue;
    }
    const int error = errno;
    if (error == EPIPE || error == ECONNRESET) {
      throw CollectiveError(who +
                            " closed its connection (its process "
                            "ended, or was killed)");
    }
    Throw("sending to " + who, error);
  }
}

size_t Socket::TryWrite(const void* data, size_t bytes,
                        const std::string& who) const {
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n =
        ::send(fd_, p + done, bytes - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    const int error = errno;
    if (error == EPIPE || error == ECONNRESET) {
      throw CollectiveError(who +
                            " closed its connection (its process "
                            "ended, or was killed)");
    }
    Throw("sending to " + who, error);
  }
  return done;
}

void Socket::ReadAll(void* data, size_t bytes, Clock::time_point deadline,
                     const GiveUp& give_up, const std::string& who) const {
  char* p = static_cast<char*>(data);
  int spins = 0;
  while (bytes > 0) {
    const ssize_t n = ::recv(fd_, p, bytes, 0);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      throw CollectiveError(who +
                            " closed its connection (its process "
                            "ended, or was killed)");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // A reply is often microseconds away (the latency of small calls):
      // try again a while before sleeping in poll(), as MPI's waits do.
      if (++spins <= kSpins) {
        std::this_thread::yield();
        continue;
      }
      WaitReady(false, deadline, give_up, "waiting for " + who);
      continue;
    }
    const int error = errno;
    if (error == ECONNRESET) {
      throw CollectiveError(who +
                            " closed its connection (its process "
                            "ended, or was killed)");
    }
    Throw("receiving from " + who, error);
  }
}

int Socket::LocalPort() const {
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    Throw("getsockname()", errno);
  }
  return ntohs(address.sin_port);
}

std::string Socket::PeerAddress() const {
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    Throw("getpeername()", errno);
  }
  char text[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &address.sin_addr, text, sizeof(text));
  return text;
}

bool IsLoopbackAddress(const std::string& numeric) {
  in_addr address{};
  return inet_pton(AF_INET, numeric.c_str(), &address) == 1 &&
         (ntohl(address.s_addr) >> 24) == 127;
}

}  // namespace ringlet::collectives::tcp
