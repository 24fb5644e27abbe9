#include "trainers/common/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

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

// The file's identity for "the same file": the folder with links resolved,
// then the name. Empty when the folder does not exist.
std::string CanonicalPath(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(Folder(path).c_str(), resolved) == nullptr) return "";
  return std::string(resolved) + "/" + BaseName(path);
}

std::runtime_error Unwritable(const std::string& flag, const std::string& path,
                              const std::string& why) {
  return std::runtime_error(flag + ": cannot write " + path + " (" + why +
                            "); check that its folder exists and is writable");
}

}  // namespace

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
    struct stat st;
    if (::stat(out.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      throw std::runtime_error(out.flag + ": " + out.path +
                               " is a folder; name a file inside it");
    }
    const std::string folder = Folder(out.path);
    if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw Unwritable(out.flag, out.path, "no folder " + folder);
    }
    // access() answers for the real user; a probe file answers for what
    // rename() will need (also on read-only mounts).
    const std::string probe = out.path + ".probe-" + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) throw Unwritable(out.flag, out.path, std::strerror(errno));
    ::close(fd);
    ::unlink(probe.c_str());
    const std::string canonical = CanonicalPath(out.path);
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

void WriteFileAtomically(const std::string& path, const std::string& contents,
                         const std::string& flag) {
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Unwritable(flag, path, std::strerror(errno));
  const char* data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(temp.c_str());
      throw Unwritable(flag, path, why);
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  // Flushed before the rename: after a crash the file is old or new, whole.
  const bool synced = ::fsync(fd) == 0;
  std::string why = synced ? "" : std::strerror(errno);
  if (::close(fd) != 0 && synced) why = std::strerror(errno);
  if (!why.empty()) {
    ::unlink(temp.c_str());
    throw Unwritable(flag, path, why);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    throw Unwritable(flag, path, why);
  }
}

}  // namespace ringlet::trainers
