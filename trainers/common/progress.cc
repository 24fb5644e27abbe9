#include "trainers/common/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

namespace ringlet::trainers {
namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// 12800 -> "12,800".
std::string WithCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

constexpr int kBarWidth = 20;
constexpr double kTerminalRedraw = 0.1;  // Seconds between redraws.
constexpr double kLogInterval = 30;      // Seconds between log lines, at most.

}  // namespace

bool IsTerminal(int fd) { return isatty(fd) == 1; }

std::string FormatDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld",
                  static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld",
                  static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

EpochProgress::EpochProgress(std::ostream& out, bool terminal, int epoch,
                             int epochs, int64_t total_images,
                             std::function<double()> now)
    : out_(out),
      terminal_(terminal),
      epoch_(epoch),
      epochs_(epochs),
      total_(total_images),
      now_(now ? std::move(now) : SteadySeconds) {
  start_ = now_();
  // Show progress at once: the first step of a large model takes a while.
  if (terminal_) {
    Update(0);
  } else {
    out_ << Line(0, 0) << '\n' << std::flush;
  }
}

std::string EpochProgress::Line(int64_t images, double elapsed) const {
  const double fraction =
      total_ > 0 ? std::min(1.0, static_cast<double>(images) / total_) : 1.0;
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string line = "epoch " + std::to_string(epoch_) + "/" +
                     std::to_string(epochs_) + " [" + std::string(filled, '#') +
                     std::string(kBarWidth - filled, '.') + "] " +
                     WithCommas(images) + "/" + WithCommas(total_);
  if (images > 0 && elapsed > 0) {
    const double rate = images / elapsed;
    line += " " + WithCommas(static_cast<int64_t>(rate)) + " img/s ETA " +
            FormatDuration((total_ - images) / rate);
  }
  return line;
}

void EpochProgress::Update(int64_t images) {
  const double t = now_();
  if (terminal_) {
    if (images > 0 && images < total_ && t - last_print_ < kTerminalRedraw) {
      return;
    }
    const std::string line = Line(images, t - start_);
    out_ << '\r' << line;
    if (line.size() < drawn_width_) {
      out_ << std::string(drawn_width_ - line.size(), ' ');
    }
    out_ << std::flush;
    drawn_width_ = std::max(drawn_width_, line.size());
  } else {
    const bool tenth = (images - last_printed_images_) * 10 >= total_;
    if (images == 0 || (!tenth && t - last_print_ < kLogInterval)) return;
    out_ << Line(images, t - start_) << '\n' << std::flush;
    last_printed_images_ = images;
  }
  last_print_ = t;
}

void EpochProgress::Finish() {
  if (terminal_ && drawn_width_ > 0) {
    out_ << '\r' << std::string(drawn_width_, ' ') << '\r' << std::flush;
    drawn_width_ = 0;
  }
}

}  // namespace ringlet::trainers
