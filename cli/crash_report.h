// A fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints its
// backtrace to stderr before the process dies of it, each frame as
// module+offset, which `addr2line -f -C -e MODULE OFFSET` turns into a
// function and line on the machine that built the binary: a crash on a lent
// GPU machine, with no debugger there, still says where it happened.
//
// Linking //cli:crash_report installs the handler (a static initialiser;
// every ringlet test and every binary through //cli:run_main link it). A
// handler already there (AddressSanitizer's, ThreadSanitizer's) is kept.
#ifndef RINGLET_CLI_CRASH_REPORT_H_
#define RINGLET_CLI_CRASH_REPORT_H_

namespace ringlet::cli {

// Installs the handlers where a signal has none; true when this process's
// SIGSEGV goes through it. Safe to call again.
bool InstallCrashReport();

}  // namespace ringlet::cli

#endif  // RINGLET_CLI_CRASH_REPORT_H_
