#include "trainers/common/checkpoints/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace ringlet::trainers {
namespace {

std::string Holder() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  char when[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc;
  gmtime_r(&now, &utc);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return "pid " + std::to_string(::getpid()) + " on host " + host +
         ", started " + when;
}

// What the holder wrote, on one line; "" when unreadable.
std::string ReadHolder(int fd) {
  char text[512] = {};
  const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  if (n <= 0) return "";
  std::string holder(text, n);
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) {
    holder.pop_back();
  }
  return holder;
}

}  // namespace

FolderLock::FolderLock(const std::string& dir, const std::string& program,
                       const std::string& flag)
    : path_(PathFor(dir, program)) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) {
    throw std::runtime_error(flag + ": cannot make the lock file " + path_ +
                             " (" + std::strerror(errno) +
                             "); check that the folder is writable");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = ReadHolder(fd_);
    ::close(fd_);
    fd_ = -1;
    if (error == EWOULDBLOCK) {
      throw std::runtime_error(
          flag + ": " + dir + " is in use by another run of " + program +
          (holder.empty() ? "" : " (" + holder + ")") +
          "; wait for it to end, or give this run its own --checkpoint_dir");
    }
    throw std::runtime_error(flag + ": cannot lock " + path_ + " (" +
                             std::strerror(error) + ")");
  }
  const std::string holder = Holder() + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    (void)!::pwrite(fd_, holder.data(), holder.size(), 0);
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // Closing drops the lock.
}

}  // namespace ringlet::trainers
