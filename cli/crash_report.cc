#include "cli/crash_report.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace ringlet::cli {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// Only write(2) from here on: the heap may be what broke.
void Write(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

void WriteNumber(uintptr_t value, int base) {
  char digits[2 + 2 * sizeof(value) * 4];
  char* end = digits + sizeof(digits) - 1;
  *end = '\0';
  char* p = end;
  do {
    *--p = "0123456789abcdef"[value % base];
    value /= base;
  } while (value > 0);
  if (base == 16) {
    *--p = 'x';
    *--p = '0';
  }
  Write(p);
}

const char* SignalName(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
  }
  return "signal";
}

void OnFatalSignal(int sig, siginfo_t* info, void*) {
  Write("\n*** fatal signal ");
  WriteNumber(static_cast<uintptr_t>(sig), 10);
  Write(" (");
  Write(SignalName(sig));
  Write(")");
  if (sig != SIGABRT && info != nullptr) {
    Write(" at address ");
    WriteNumber(reinterpret_cast<uintptr_t>(info->si_addr), 16);
  }
  Write("; backtrace, `addr2line -f -C -e MODULE OFFSET` names each line:\n");
  void* frames[64];
  const int count = backtrace(frames, 64);
  for (int i = 0; i < count; ++i) {
    Write("  #");
    WriteNumber(static_cast<uintptr_t>(i), 10);
    Write(" ");
    Dl_info where;
    if (dladdr(frames[i], &where) != 0 && where.dli_fname != nullptr) {
      Write(where.dli_fname);
      Write("+");
      // Return addresses point after the call: one byte back is inside it.
      WriteNumber(reinterpret_cast<uintptr_t>(frames[i]) -
                      reinterpret_cast<uintptr_t>(where.dli_fbase) -
                      (i > 0 ? 1 : 0),
                  16);
      if (where.dli_sname != nullptr) {
        Write(" (");
        Write(where.dli_sname);
        Write(")");
      }
    } else {
      WriteNumber(reinterpret_cast<uintptr_t>(frames[i]), 16);
    }
    Write("\n");
  }
  // SA_RESETHAND restored the default action: die of the same signal.
  raise(sig);
}

}  // namespace

bool InstallCrashReport() {
  // backtrace() loads its unwinder on first use; do that now, not in the
  // handler.
  void* warm[1];
  backtrace(warm, 1);
  bool segv_reported = false;
  for (int sig : kSignals) {
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) != 0) continue;
    const bool ours =
        (old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction == &OnFatalSignal;
    const bool none =
        (old.sa_flags & SA_SIGINFO) == 0 && old.sa_handler == SIG_DFL;
    if (ours) {
      segv_reported |= sig == SIGSEGV;
      continue;
    }
    if (!none) continue;  // A sanitizer's or the program's own handler.
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_sigaction = &OnFatalSignal;
    action.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    if (sigaction(sig, &action, nullptr) == 0) segv_reported |= sig == SIGSEGV;
  }
  return segv_reported;
}

namespace {
[[maybe_unused]] const bool kInstalled = InstallCrashReport();
}  // namespace

}  // namespace ringlet::cli
