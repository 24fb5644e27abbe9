// The files a trainer writes (--metrics_out, --csv_out, --plot_out,
// --params_out, the checkpoint): checked before training starts, so a bad
// path costs seconds rather than a whole run, and written so that nothing
// but a regular file is ever replaced:
//  - a regular file (or a new one) is written whole to a temporary name in
//    its folder and renamed over it, so neither a reader, a second run
//    writing the same file nor a crash ever sees half a file;
//  - a symbolic link is followed: the file it names is replaced, the link
//    stays; a link to nothing is refused;
//  - a character device or a FIFO (/dev/null, /dev/stdout, a named pipe) is
//    written through, as `tee` would: opened once, and each write adds
//    what the file's contents gained since the last (a metrics stream
//    reads as the lines come); a FIFO nobody reads is refused up front;
//  - /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: this process's
//    descriptor, written through as a stream (a log stdout is redirected
//    to keeps its lines);
//  - a folder, a block device (a disk) or a socket is refused.
// A write that fails (disk full, /dev/full) throws, naming the flag.
#ifndef RINGLET_TRAINERS_COMMON_OUTPUTS_OUTPUT_FILES_H_
#define RINGLET_TRAINERS_COMMON_OUTPUTS_OUTPUT_FILES_H_

#include <string>
#include <vector>

namespace ringlet::trainers {

struct OutputFile {
  std::string flag;  // "--plot_out", for messages.
  std::string path;  // Empty: not asked for; skipped.
  // False for files a run reads back (checkpoints): only a regular file.
  bool stream_ok = true;
};

// Under `bazel run` the program starts in its runfiles folder; a relative
// path means the folder the user typed the command in
// ($BUILD_WORKING_DIRECTORY). Other paths are returned as they are.
std::string ResolveUserPath(const std::string& path);

// Throws std::runtime_error naming the flag and what to do when a path is a
// folder or another kind refused above, its folder does not exist or
// cannot be written, a FIFO has no reader, or two flags name the same
// regular file (compared after resolving links). Removes the temporaries
// that killed runs on this host left beside each file.
void CheckOutputFiles(const std::vector<OutputFile>& outputs);

// A file a run reads or holds, which no output may replace: "the training
// data", "the lock of --checkpoint_dir".
struct KeptFile {
  std::string what;
  std::string path;
};

// Throws std::runtime_error naming the flag and the file when an output
// names one of `kept` (the same file: by device and inode where both
// exist, else by the path with links resolved). Streams (/dev/stdout, a
// FIFO) replace nothing and are let through.
void CheckOutputsKeep(const std::vector<OutputFile>& outputs,
                      const std::vector<KeptFile>& kept);

// Writes `contents` to `path` as the header says. Throws std::runtime_error
// starting with `flag` and naming the path and the system's reason.
void WriteOutputFile(const std::string& path, const std::string& contents,
                     const std::string& flag, bool stream_ok = true);

// "<path>.tmp-<host>-<pid>": where WriteOutputFile writes before renaming.
std::string TemporaryPathFor(const std::string& path);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_OUTPUTS_OUTPUT_FILES_H_
