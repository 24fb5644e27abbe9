#include "cli/standard_streams.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <streambuf>
#include <vector>

namespace ringlet::cli {
namespace {

// What to do about a write's errno, after its strerror.
std::string Why(int error) {
  std::string why = std::strerror(error);
  switch (error) {
    case EPIPE:
      return why + ": the program reading it has ended";
    case ENOSPC:
    case EDQUOT:
      return why + ": free some space, or send it to another disk";
    case EBADF:
      return why + ": it was closed before the program started";
    default:
      return why;
  }
}

// A stream buffer over a descriptor that remembers its first failed write
// (and writes nothing after it: a stream that lost lines stays failed).
class DescriptorBuffer : public std::streambuf {
 public:
  DescriptorBuffer(int fd, size_t buffer) : fd_(fd), buffer_(buffer) {
    if (!buffer_.empty()) setp(buffer_.data(), buffer_.data() + buffer_.size());
  }

  int error() const { return error_.load(); }
  // Fails every write from now with `error`.
  void Fail(int error) { error_.store(error); }

 protected:
  int_type overflow(int_type c) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!Drain()) return traits_type::eof();
    if (traits_type::eq_int_type(c, traits_type::eof())) {
      return traits_type::not_eof(c);
    }
    const char ch = traits_type::to_char_type(c);
    if (pptr() != nullptr && pptr() < epptr()) {
      *pptr() = ch;
      pbump(1);
      return c;
    }
    return WriteAll(&ch, 1) ? c : traits_type::eof();
  }

  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.load() != 0) return 0;
    if (pptr() != nullptr && n <= epptr() - pptr()) {
      std::memcpy(pptr(), s, static_cast<size_t>(n));
      pbump(static_cast<int>(n));
      return n;
    }
    if (!Drain() || !WriteAll(s, static_cast<size_t>(n))) return 0;
    return n;
  }

  int sync() override {
    std::lock_guard<std::mutex> lock(mu_);
    return Drain() ? 0 : -1;
  }

 private:
  // Writes what is buffered; false once any write failed.
  bool Drain() {
    if (error_.load() != 0) return false;
    if (pptr() == nullptr || pptr() == pbase()) return true;
    const bool ok = WriteAll(pbase(), static_cast<size_t>(pptr() - pbase()));
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return ok;
  }

  bool WriteAll(const char* data, size_t size) {
    while (size > 0) {
      const ssize_t n = ::write(fd_, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_.store(n < 0 ? errno : EIO);
        return false;
      }
      data += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }

  const int fd_;
  std::vector<char> buffer_;
  std::mutex mu_;
  std::atomic<int> error_{0};
};

DescriptorBuffer* out_buffer = nullptr;
DescriptorBuffer* err_buffer = nullptr;
std::atomic<int> stdio_error{0};

}  // namespace

void GuardStandardStreams() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::signal(SIGPIPE, SIG_IGN);
    std::cout.flush();
    std::fflush(stdout);
    // A descriptor closed before the program started (`2>&-`) would be
    // the next file opened (a checkpoint's lock, say), and stderr's lines
    // would land in it: /dev/null holds its place, and its stream fails.
    bool closed[3] = {false, false, false};
    for (int fd = 0; fd < 3; ++fd) {
      if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
      closed[fd] = true;
      const int null = ::open("/dev/null", O_RDWR);
      if (null >= 0 && null != fd) {
        ::dup2(null, fd);
        ::close(null);
      }
    }
    // Never freed: the streams may be used until the process ends.
    out_buffer = new DescriptorBuffer(1, 1 << 14);
    err_buffer = new DescriptorBuffer(2, 0);
    if (closed[1]) out_buffer->Fail(EBADF);
    if (closed[2]) err_buffer->Fail(EBADF);
    std::cout.rdbuf(out_buffer);
    std::cerr.rdbuf(err_buffer);
    std::clog.rdbuf(err_buffer);
  });
}

std::string StandardStreamFailure() {
  int error = out_buffer != nullptr ? out_buffer->error() : 0;
  if (error == 0) error = stdio_error.load();
  if (error != 0) {
    return "standard output could not be written (" + Why(error) + ")";
  }
  if (err_buffer != nullptr && err_buffer->error() != 0) {
    return "standard error could not be written (" + Why(err_buffer->error()) +
           ")";
  }
  return "";
}

std::string FlushStandardOutput() {
  std::cout.flush();
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    stdio_error.store(errno != 0 ? errno : EIO);
  }
  return StandardStreamFailure();
}

}  // namespace ringlet::cli
