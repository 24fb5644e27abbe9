// A closed or failing standard output as an error a program sees and can
// name, never a silent death or a silent loss: SIGPIPE is ignored (a write
// to a pipe whose reader has gone fails with EPIPE instead of ending the
// process with exit 141 and no word), and std::cout and std::cerr write
// through descriptors 1 and 2 keeping the first failure's errno. C stdio's
// stdout is checked when the program ends (FlushStandardOutput).
//
// A trainer stops on a failed stream as on a signal (its checkpoint
// written); every binary ends non-zero when its output was lost, as
// `cmd > /dev/full` or `cmd | head -1` would otherwise exit 0 or die
// without a line.
#ifndef RINGLET_CLI_STANDARD_STREAMS_H_
#define RINGLET_CLI_STANDARD_STREAMS_H_

#include <string>

namespace ringlet::cli {

// Installs the above; idempotent. Call first in main (RunMain does).
void GuardStandardStreams();

// "" while every write to standard output and error succeeded; else which
// failed and why: "standard output could not be written (Broken pipe: the
// program reading it has ended)".
std::string StandardStreamFailure();

// Flushes std::cout and C stdio's stdout and returns
// StandardStreamFailure(), also naming a failure of stdio's own buffer.
std::string FlushStandardOutput();

}  // namespace ringlet::cli

#endif  // RINGLET_CLI_STANDARD_STREAMS_H_
