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
// Notices end with '\n' (reasons hold no newline). A failure, relayed by
// process 0: 'F', the lost process's index (-1: not known), ' ', the
// reason. A process leaving to regroup, to process 0: 'L', the reason.
constexpr char kFailure = 'F';
constexpr char kLeaving = 'L';
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
                       std::chrono::milliseconds timeout, JobHealth* health,
                       OnLost on_lost)
    : process_(process),
      links_(std::move(links)),
      names_(std::move(names)),
      interval_(interval),
      timeout_(timeout),
      health_(health),
      on_lost_(std::move(on_lost)),
      last_heard_(links_.size(), Clock::now()),
      pending_(links_.size()),
      dead_(links_.size(), false),
      left_(links_.size(), false) {
  thread_ = std::thread([this] { Loop(); });
}

Heartbeats::~Heartbeats() { Stop(); }

void Heartbeats::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void Heartbeats::Leave(const std::string& reason) {
  Stop();
  if (process_ == 0 || !links_[0].valid()) return;
  const std::string notice =
      kLeaving + reason.substr(0, kMaxReason) + std::string("\n");
  try {
    links_[0].TryWrite(notice.data(), notice.size(), "process 0");
  } catch (const CollectiveError&) {
  }
}

bool Heartbeats::IsDead(int p) const {
  std::lock_guard<std::mutex> lock(mu_);
  return dead_[p];
}

void Heartbeats::MarkDead(int p, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (dead_[p] || left_[p]) return;
    dead_[p] = true;
  }
  Report(reason, p);
  if (on_lost_) on_lost_(p);
}

void Heartbeats::Report(const std::string& reason, int lost) {
  if (lost >= 0) health_->SetLost(lost);
  const bool first = !reported_;
  reported_ = true;
  if (first) health_->Fail(reason);
  // Process 0 tells the others why, so each names the same process, and
  // who died, also after the first failure: a regroup waits on it.
  if (process_ != 0 || (!first && lost < 0)) return;
  const std::string notice = kFailure + std::to_string(lost) + " " +
                             reason.substr(0, kMaxReason) + std::string("\n");
  for (Socket& s : links_) {
    if (!s.valid()) continue;
    try {
      s.TryWrite(notice.data(), notice.size(), "a heartbeat peer");
    } catch (const CollectiveError&) {
    }
  }
}

void Heartbeats::OnNotice(int p, const std::string& notice) {
  if (notice[0] == kLeaving) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      left_[p] = true;
    }
    Report(names_[p] + " is regrouping the job: " + notice.substr(1), -1);
    return;
  }
  // A failure relayed by process 0: "F<lost> <reason>".
  const size_t space = notice.find(' ');
  int lost = -1;
  if (space != std::string::npos) {
    try {
      lost = std::stoi(notice.substr(1, space - 1));
    } catch (const std::exception&) {
    }
  }
  Report(
      space == std::string::npos ? notice.substr(1) : notice.substr(space + 1),
      lost);
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
          OnNotice(p, notice);
          notice.clear();
        } else if (notice.size() < kMaxReason + 24) {
          notice += buffer[i];
        }
      } else if (buffer[i] == kFailure || buffer[i] == kLeaving) {
        notice = buffer[i];
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
        links_[p].Close();
        MarkDead(p, names_[p] +
                        " closed its connection (its process ended, or "
                        "was killed)");
        continue;
      }
      if (seen - last_heard_[p] > timeout_) {
        MarkDead(p, names_[p] + " stopped answering: nothing from it for " +
                        Seconds(timeout_) +
                        " (stopped, e.g. by SIGSTOP, or its host or network "
                        "hung)");
      }
    }
  }
}

}  // namespace ringlet::collectives::tcp
