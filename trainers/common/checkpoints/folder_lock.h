// One run per checkpoint folder: two runs given the same --checkpoint_dir
// would overwrite each other's checkpoints without a word. The first takes
// an advisory lock (flock) on <dir>/<program>.lock and holds it until it
// ends, however it ends (the kernel drops it with the process, kill -9
// too); the second is refused with who holds it.
#ifndef RINGLET_TRAINERS_COMMON_CHECKPOINTS_FOLDER_LOCK_H_
#define RINGLET_TRAINERS_COMMON_CHECKPOINTS_FOLDER_LOCK_H_

#include <string>

namespace ringlet::trainers {

class FolderLock {
 public:
  // Locks <dir>/<program>.lock and writes the holder (pid, host, start
  // time) into it. Throws std::runtime_error naming `flag` and the holder
  // when another run has it, or when the file cannot be made.
  FolderLock(const std::string& dir, const std::string& program,
             const std::string& flag);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  const std::string& path() const { return path_; }
  // <dir>/<program>.lock: the file a lock of `program` on `dir` holds.
  static std::string PathFor(const std::string& dir,
                             const std::string& program) {
    return dir + "/" + program + ".lock";
  }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_CHECKPOINTS_FOLDER_LOCK_H_
