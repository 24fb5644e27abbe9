#include "trainers/common/loop/stop_signals.h"

#include <unistd.h>

#include <cstring>

namespace ringlet::trainers {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
constexpr int kKinds = sizeof(kSignals) / sizeof(kSignals[0]);

volatile std::sig_atomic_t recorded = 0;

// The lines the handlers write, one per signal, made before they are
// installed; a handler only reads them.
struct Lines {
  char text[kKinds][320];
  size_t size[kKinds];
};
Lines lines[2];                          // Two: the one being set stays whole.
volatile std::sig_atomic_t current = 0;  // Which of the two is installed.

int IndexOf(int signal) {
  for (int k = 0; k < kKinds; ++k) {
    if (kSignals[k] == signal) return k;
  }
  return -1;
}

// Writes the prepared line, if any, and dies of the signal.
void SayAndEnd(int signal) {
  const int k = IndexOf(signal);
  const Lines& l = lines[current];
  if (k >= 0 && l.size[k] > 0) {
    const ssize_t ignored = ::write(2, l.text[k], l.size[k]);
    (void)ignored;
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void RecordOrEnd(int signal) {
  if (recorded != 0) {
    SayAndEnd(signal);
    return;
  }
  recorded = signal;
}

}  // namespace

const std::vector<int>& StopSignals() {
  static const std::vector<int> signals(kSignals, kSignals + kKinds);
  return signals;
}

std::string SignalName(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGPIPE:
      return "SIGPIPE";
    default:
      return "signal " + std::to_string(signal);
  }
}

void HandleStopSignals(const std::string& program, StopMode mode, bool speak) {
  const int next = 1 - current;
  Lines& l = lines[next];
  for (int k = 0; k < kKinds; ++k) {
    const std::string name = SignalName(kSignals[k]);
    std::string line;
    switch (mode) {
      case StopMode::kStartUp:
        line = program + ": stopped by " + name +
               " during start-up; nothing was trained";
        break;
      case StopMode::kEndNow:
        line = program + ": stopped by " + name +
               " during training; no checkpoint (pass --checkpoint_dir to "
               "keep one)";
        break;
      case StopMode::kAfterStep:
        line = program + ": a second " + name +
               ": ended at once, without a checkpoint of this step (the last "
               "one written stays)";
        break;
    }
    line += "\n";
    if (!speak) line.clear();
    const size_t n = std::min(line.size(), sizeof(l.text[k]));
    std::memcpy(l.text[k], line.data(), n);
    l.size[k] = n;
  }
  current = next;
  for (const int signal : kSignals) {
    std::signal(signal, mode == StopMode::kAfterStep ? RecordOrEnd : SayAndEnd);
  }
}

const volatile std::sig_atomic_t* StopRequested() { return &recorded; }

}  // namespace ringlet::trainers
