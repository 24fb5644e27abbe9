#include "collectives/backends/tcp/heartbeats.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "collectives/api/collective_error.h"

namespace ringlet::collectives::tcp {
namespace {

constexpr char kBeat = 'B';
// A failure notice: 'F', the reason, then '\n' (reasons hold no newline).
constexpr char kFailure = 'F';
constexpr size_t kMaxReason = 2048;

std::string Seconds(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", ms.count() / 1000.0);
  return text;
}

}  // namespace

Heartbeats::Heartbeats(int process, std::vector<Socket> links,
                       std::vector<std::string> names,
                       std::chrono::milliseconds interval,
                       std::chrono::milliseconds timeout, JobHealth* health)
    : process_(process),
      links_(std::move(links)),
      names_(std::move(names)),
      interval_(interval),
      timeout_(timeout),
      health_(health),
      last_heard_(links_.size(), Clock::now()),
      pending_(links_.size()) {
  thread_ = std::thread([this] { Loop(); });
}

Heartbeats::~Heartbeats() {
  stop_.store(true);
  thread_.join();
}

void Heartbeats::Report(const std::string& reason) {
  if (reported_) return;
  reported_ = true;
  health_->Fail(reason);
  // Process 0 tells the others why, so each names the same process.
  if (process_ != 0) return;
  const std::string notice =
      kFailure + reason.substr(0, kMaxReason) + std::string("\n");
  for (Socket& s : links_) {
    if (!s.valid()) continue;
    try {
      s.TryWrite(notice.data(), notice.size(), "a heartbeat peer");
    } catch (const CollectiveError&) {
    }
  }
}

bool Heartbeats::Drain(int p, Clock::time_point now) {
  char buffer[512];
  while (true) {
    const ssize_t n = ::recv(links_[p].fd(), buffer, sizeof(buffer), 0);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    last_heard_[p] = now;
    for (ssize_t i = 0; i < n; ++i) {
      std::string& notice = pending_[p];
      if (!notice.empty()) {
        if (buffer[i] == '\n') {
          Report(notice.substr(1));
          notice.clear();
        } else if (notice.size() < kMaxReason + 1) {
          notice += buffer[i];
        }
      } else if (buffer[i] == kFailure) {
        notice = kFailure;
      }  // kBeat: only its arrival counts.
    }
  }
}

void Heartbeats::Loop() {
  Clock::time_point next_beat = Clock::now();
  while (!stop_.load()) {
    const Clock::time_point now = Clock::now();
    if (now >= next_beat) {
      next_beat = now + interval_;
      if (!paused_.load()) {
        for (Socket& s : links_) {
          if (!s.valid()) continue;
          try {
            s.TryWrite(&kBeat, 1, "a heartbeat peer");
          } catch (const CollectiveError&) {
            // A closed connection: Drain() names it.
          }
        }
      }
    }
    std::vector<pollfd> fds;
    std::vector<int> who;
    for (size_t p = 0; p < links_.size(); ++p) {
      if (!links_[p].valid()) continue;
      fds.push_back({links_[p].fd(), POLLIN, 0});
      who.push_back(static_cast<int>(p));
    }
    ::poll(fds.data(), fds.size(), PollTimeoutMs(next_beat, 50));
    if (paused_.load()) continue;  // A stopped process notices nothing.
    const Clock::time_point seen = Clock::now();
    for (size_t k = 0; k < fds.size(); ++k) {
      const int p = who[k];
      if (fds[k].revents != 0 && !Drain(p, seen)) {
        Report(names_[p] +
               " closed its connection (its process ended, or "
               "was killed)");
        links_[p].Close();
        continue;
      }
      if (seen - last_heard_[p] > timeout_) {
        Report(names_[p] + " stopped answering: nothing from it for " +
               Seconds(timeout_) +
               " (stopped, e.g. by SIGSTOP, or its host or network hung)");
      }
    }
  }
}

}  // namespace ringlet::collectives::tcp
