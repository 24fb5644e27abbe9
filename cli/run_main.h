// Every ringlet binary's main: runs the program and turns anything it
// throws into one line, "<program>: error: <what>", and exit code 1, so no
// error ends in an abort (uncaught exceptions call std::terminate: exit
// 134 and, for a std::bad_alloc, no word of what ran out).
#ifndef RINGLET_CLI_RUN_MAIN_H_
#define RINGLET_CLI_RUN_MAIN_H_

#include <functional>
#include <string>

namespace ringlet::cli {

// The exit code of an error at run time.
inline constexpr int kRunError = 1;

// Guards the standard streams (standard_streams.h), then returns body()'s
// exit code, or kRunError after printing on stderr what it threw, or that
// standard output could not be written.
int RunMain(const std::string& program, const std::function<int()>& body);

}  // namespace ringlet::cli

#endif  // RINGLET_CLI_RUN_MAIN_H_
