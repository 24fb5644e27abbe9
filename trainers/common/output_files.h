// The files a trainer writes (--metrics_out, --plot_out, --params_out, the
// checkpoint): checked before training starts, so a bad path costs seconds
// rather than a whole run, and written whole to a temporary name in the
// same folder and renamed over the target, so neither a reader, a second
// run writing the same file nor a crash ever sees half a file.
#ifndef RINGLET_TRAINERS_COMMON_OUTPUT_FILES_H_
#define RINGLET_TRAINERS_COMMON_OUTPUT_FILES_H_

#include <string>
#include <vector>

namespace ringlet::trainers {

struct OutputFile {
  std::string flag;  // "--plot_out", for messages.
  std::string path;  // Empty: not asked for; skipped.
};

// Under `bazel run` the program starts in its runfiles folder; a relative
// path means the folder the user typed the command in
// ($BUILD_WORKING_DIRECTORY). Other paths are returned as they are.
std::string ResolveUserPath(const std::string& path);

// Throws std::runtime_error naming the flag and what to do when a path is a
// folder, its folder does not exist or cannot be written, or two flags name
// the same file (compared after resolving links in the folder).
void CheckOutputFiles(const std::vector<OutputFile>& outputs);

// Writes `contents` to a temporary file beside `path`, flushes it to disk
// and renames it over `path`. Throws std::runtime_error starting with
// `flag` and naming the path and the system's reason.
void WriteFileAtomically(const std::string& path, const std::string& contents,
                         const std::string& flag);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_OUTPUT_FILES_H_
