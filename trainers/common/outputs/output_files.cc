#include "trainers/common/outputs/output_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace ringlet::trainers {
namespace {

std::string Folder(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
    return "localhost";
  }
  return name;
}

// The file's identity for "the same file": the folder with links resolved,
// then the name. Empty when the folder does not exist.
std::string CanonicalPath(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(Folder(path).c_str(), resolved) == nullptr) return "";
  return std::string(resolved) + "/" + BaseName(path);
}

// What to do about errno `error`, after "cannot write PATH (reason)".
std::string AdviceFor(int error) {
  switch (error) {
    case ENOSPC:
    case EDQUOT:
      return "free some space, or name a file on another disk";
    case EPIPE:
      return "the process reading it went away";
    case ENXIO:
    case ENODEV:
      return "nothing is behind that device here (no terminal?); name a file";
    default:
      return "check that its folder exists and is writable";
  }
}

std::runtime_error Unwritable(const std::string& flag, const std::string& path,
                              const std::string& why, int error = 0) {
  return std::runtime_error(flag + ": cannot write " + path + " (" + why +
                            "); " + AdviceFor(error));
}

enum class Kind { kNew, kRegular, kStream };

struct Target {
  Kind kind = Kind::kNew;
  std::string path;  // A regular file: the file itself, links resolved.
  mode_t mode = 0644;
  int own_fd = -1;  // A stream that is one of this process's descriptors.
};

// /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name this
// process's descriptor N: written through it (its offset, as `tee` and a
// shell's `>` share it), never by opening the file it leads to, which
// would replace or overwrite a log that stdout is redirected to. -1 for
// any other path.
int OwnDescriptor(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (path.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = path.substr(prefix.size());
    if (digits.empty() || digits.size() > 6 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return -1;
    }
    return std::atoi(digits.c_str());
  }
  return -1;
}

// What stands at `path`, and where its contents go; throws for the kinds
// that are refused.
Target Classify(const std::string& path, const std::string& flag,
                bool stream_ok) {
  const int own = OwnDescriptor(path);
  if (own >= 0) {
    if (!stream_ok) {
      throw std::runtime_error(
          flag + ": " + path +
          " is this process's own output, not a regular file; this file is "
          "read back later, so name a regular file");
    }
    return {Kind::kStream, path, 0644, own};
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {Kind::kNew, path};
    throw Unwritable(flag, path, std::strerror(errno), errno);
  }
  Target target{Kind::kRegular, path, st.st_mode & 07777};
  if (S_ISLNK(st.st_mode)) {
    char link[PATH_MAX] = {};
    const ssize_t n = ::readlink(path.c_str(), link, sizeof(link) - 1);
    const std::string to = n > 0 ? std::string(link, n) : "?";
    if (::stat(path.c_str(), &st) != 0) {
      throw std::runtime_error(
          flag + ": " + path + " is a symbolic link to " + to +
          ", which cannot be reached (" + std::strerror(errno) +
          "); make the file it names, remove the link, or name another file");
    }
    target.mode = st.st_mode & 07777;
    if (S_ISREG(st.st_mode)) {
      char resolved[PATH_MAX];
      if (::realpath(path.c_str(), resolved) == nullptr) {
        throw Unwritable(flag, path, std::strerror(errno), errno);
      }
      target.path = resolved;  // Replaced there; the link stays.
    }
  }
  if (S_ISREG(st.st_mode)) return target;
  if (S_ISDIR(st.st_mode)) {
    throw std::runtime_error(flag + ": " + path +
                             " is a folder; name a file inside it");
  }
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    if (!stream_ok) {
      throw std::runtime_error(
          flag + ": " + path + " is a " +
          (S_ISFIFO(st.st_mode) ? "FIFO" : "device") +
          ", not a regular file; this file is read back later, so name a "
          "regular file");
    }
    target.kind = Kind::kStream;
    target.path = path;
    return target;
  }
  if (S_ISBLK(st.st_mode)) {
    throw std::runtime_error(flag + ": " + path +
                             " is a block device (a disk), which ringlet "
                             "never writes over; name a regular file");
  }
  throw std::runtime_error(flag + ": " + path +
                           " is a socket; name a regular file, a FIFO or a "
                           "character device");
}

// Devices and FIFOs, opened once per flag and kept open: a FIFO's reader
// sees one stream, not an end of file per write.
struct Stream {
  int fd = -1;
  std::string written;  // What was written so far.
};

std::mutex& StreamsMutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::pair<std::string, std::string>, Stream>& Streams() {
  static auto* streams =
      new std::map<std::pair<std::string, std::string>, Stream>();
  return *streams;
}

// Callers hold StreamsMutex.
Stream& OpenStream(const std::string& flag, const Target& target) {
  const std::string& path = target.path;
  Stream& stream = Streams()[{flag, path}];
  if (stream.fd >= 0) return stream;
  if (target.own_fd >= 0) {
    const int fd = ::fcntl(target.own_fd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
      throw Unwritable(flag, path,
                       "descriptor " + std::to_string(target.own_fd) +
                           " is not open: " + std::strerror(errno),
                       errno);
    }
    stream.fd = fd;
    return stream;
  }
  // Non-blocking, so that a FIFO without a reader is an error (ENXIO), not
  // a hang; writes block again after.
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    struct stat st;
    // ENXIO is also a device with nothing behind it (/dev/tty, no terminal).
    if (error == ENXIO && ::stat(path.c_str(), &st) == 0 &&
        S_ISFIFO(st.st_mode)) {
      throw std::runtime_error(flag + ": no process is reading the FIFO " +
                               path + "; start its reader first");
    }
    throw Unwritable(flag, path, std::strerror(error), error);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  stream.fd = fd;
  return stream;
}

// write(2) of all `size` bytes; returns 0 or the errno. SIGPIPE is blocked
// on this thread meanwhile (a reader gone is EPIPE, not death) and a
// pending one is taken back.
int WriteAll(int fd, const char* data, size_t size) {
  sigset_t pipe, old;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  int error = 0;
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : EIO;
      break;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  if (error == EPIPE) {
    const timespec now = {0, 0};
    sigtimedwait(&pipe, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return error;
}

void WriteStream(const std::string& flag, const Target& target,
                 const std::string& contents) {
  const std::string& path = target.path;
  std::lock_guard<std::mutex> lock(StreamsMutex());
  Stream& stream = OpenStream(flag, target);
  // A file that grew by appending (metrics, CSV) adds its new part; one
  // that changed (a plot redrawn) is written again whole.
  const bool grew =
      contents.compare(0, stream.written.size(), stream.written) == 0;
  const size_t from = grew ? stream.written.size() : 0;
  const int error =
      WriteAll(stream.fd, contents.data() + from, contents.size() - from);
  if (error != 0) throw Unwritable(flag, path, std::strerror(error), error);
  stream.written = contents;
}

void ReplaceRegularFile(const Target& target, const std::string& path,
                        const std::string& contents, const std::string& flag) {
  const std::string temp = TemporaryPathFor(target.path);
  ::unlink(temp.c_str());  // One of this process's, left by a failed write.
  const int fd =
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
             target.kind == Kind::kRegular ? target.mode : 0644);
  if (fd < 0) throw Unwritable(flag, path, std::strerror(errno), errno);
  // The file keeps its permissions, as `sed -i` keeps them.
  if (target.kind == Kind::kRegular) ::fchmod(fd, target.mode);
  int error = WriteAll(fd, contents.data(), contents.size());
  // Flushed before the rename: after a crash the file is old or new, whole.
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temp.c_str(), target.path.c_str()) != 0) {
    error = errno;
  }
  if (error != 0) {
    ::unlink(temp.c_str());
    throw Unwritable(flag, path, std::strerror(error), error);
  }
}

// The process id at the end of a temporary's name ("out.tmp-host-123"),
// when it names this host (or none: older names); else -1.
pid_t OwnerOnThisHost(const std::string& suffix, const std::string& host) {
  const size_t dash = suffix.rfind('-');
  const std::string digits =
      dash == std::string::npos ? suffix : suffix.substr(dash + 1);
  const std::string named =
      dash == std::string::npos ? "" : suffix.substr(0, dash);
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  if (!named.empty() && named != host) return -1;
  return static_cast<pid_t>(std::atol(digits.c_str()));
}

// Temporaries and probes beside `path` whose writer on this host is gone
// (killed during a write): nothing will ever rename them.
void RemoveStaleTemporaries(const std::string& path) {
  const std::string folder = Folder(path);
  const std::string base = BaseName(path);
  const std::string host = HostName();
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    for (const std::string& tag :
         {std::string(".tmp-"), std::string(".probe-")}) {
      const std::string prefix = base + tag;
      if (name.compare(0, prefix.size(), prefix) != 0) continue;
      const pid_t pid = OwnerOnThisHost(name.substr(prefix.size()), host);
      if (pid <= 0 || pid == ::getpid()) continue;
      if (::kill(pid, 0) != 0 && errno == ESRCH) {
        ::unlink((folder + "/" + name).c_str());
      }
    }
  }
  ::closedir(dir);
}

}  // namespace

std::string TemporaryPathFor(const std::string& path) {
  return path + ".tmp-" + HostName() + "-" + std::to_string(::getpid());
}

std::string ResolveUserPath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr || cwd[0] == '\0') {
    return path;
  }
  return std::string(cwd) + "/" + path;
}

void CheckOutputFiles(const std::vector<OutputFile>& outputs) {
  std::vector<std::pair<std::string, std::string>> seen;  // canonical, flag
  for (const OutputFile& out : outputs) {
    if (out.path.empty()) continue;
    const Target target = Classify(out.path, out.flag, out.stream_ok);
    if (target.kind == Kind::kStream) {
      // Opened now: a FIFO without a reader fails before any work.
      std::lock_guard<std::mutex> lock(StreamsMutex());
      OpenStream(out.flag, target);
      continue;
    }
    const std::string folder = Folder(target.path);
    struct stat st;
    if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw Unwritable(out.flag, out.path, "no folder " + folder);
    }
    RemoveStaleTemporaries(target.path);
    // access() answers for the real user; a probe file answers for what
    // rename() will need (also on read-only mounts).
    const std::string probe =
        target.path + ".probe-" + HostName() + "-" + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
      throw Unwritable(out.flag, out.path, std::strerror(errno), errno);
    }
    ::close(fd);
    ::unlink(probe.c_str());
    const std::string canonical = CanonicalPath(target.path);
    for (const auto& [other, other_flag] : seen) {
      if (other == canonical) {
        throw std::runtime_error(out.flag + " and " + other_flag +
                                 " name the same file, " + out.path +
                                 "; give each its own file");
      }
    }
    seen.emplace_back(canonical, out.flag);
  }
}

namespace {

// What makes two paths the same file.
struct Identity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string canonical;  // Links resolved; "" when the folder is missing.

  bool SameAs(const Identity& other) const {
    if (exists && other.exists) {
      return device == other.device && inode == other.inode;
    }
    return !canonical.empty() && canonical == other.canonical;
  }
};

Identity IdentityOf(const std::string& path) {
  Identity id;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.device = st.st_dev;
    id.inode = st.st_ino;
  }
  char resolved[PATH_MAX];
  id.canonical = ::realpath(path.c_str(), resolved) != nullptr
                     ? std::string(resolved)
                     : CanonicalPath(path);
  return id;
}

}  // namespace

void CheckOutputsKeep(const std::vector<OutputFile>& outputs,
                      const std::vector<KeptFile>& kept) {
  std::vector<Identity> kept_ids;
  for (const KeptFile& k : kept) kept_ids.push_back(IdentityOf(k.path));
  for (const OutputFile& out : outputs) {
    if (out.path.empty() || OwnDescriptor(out.path) >= 0) continue;
    struct stat st;
    if (::stat(out.path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) continue;
    const Identity id = IdentityOf(out.path);
    for (size_t i = 0; i < kept.size(); ++i) {
      if (kept[i].path.empty() || !id.SameAs(kept_ids[i])) continue;
      throw std::runtime_error(out.flag + ": " + out.path + " is " +
                               kept[i].what +
                               ", which this run must not replace; name "
                               "another file");
    }
  }
}

void WriteOutputFile(const std::string& path, const std::string& contents,
                     const std::string& flag, bool stream_ok) {
  const Target target = Classify(path, flag, stream_ok);
  if (target.kind == Kind::kStream) {
    WriteStream(flag, target, contents);
  } else {
    ReplaceRegularFile(target, path, contents, flag);
  }
}

}  // namespace ringlet::trainers
