#include "trainers/common/outputs/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <utility>

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

ProgressBar::ProgressBar(std::ostream& out, bool terminal, std::string label,
                         int64_t total_images, std::function<double()> now)
    : out_(out),
      terminal_(terminal),
      label_(std::move(label)),
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

std::string ProgressBar::Line(int64_t images, double elapsed, double loss,
                              double comm_fraction) const {
  const double fraction =
      total_ > 0 ? std::min(1.0, static_cast<double>(images) / total_) : 1.0;
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string line = label_ + " [" + std::string(filled, '#') +
                     std::string(kBarWidth - filled, '.') + "] " +
                     WithCommas(images) + "/" + WithCommas(total_);
  // A resumed pass's earlier images were not done in this `elapsed`.
  const int64_t done_here = images - images_before_;
  if (done_here > 0 && elapsed > 0) {
    const double rate = done_here / elapsed;
    const double left = (total_ - images) / rate;
    line += " " + WithCommas(static_cast<int64_t>(rate)) + " img/s";
    if (std::isfinite(loss)) {
      char text[32];
      std::snprintf(text, sizeof(text), " loss %.3f", loss);
      line += text;
    }
    if (std::isfinite(comm_fraction)) {
      char text[32];
      std::snprintf(text, sizeof(text), " comm %.0f%%", 100 * comm_fraction);
      line += text;
    }
    line += " ETA " + FormatDuration(left);
    const double after = seconds_after_ ? seconds_after_(rate) : 0;
    if (after > 0) line += " (run " + FormatDuration(left + after) + ")";
  }
  return line;
}

void ProgressBar::Update(int64_t images, double loss, double comm_fraction) {
  const double t = now_();
  if (terminal_) {
    if (images > 0 && images < total_ && t - last_print_ < kTerminalRedraw) {
      return;
    }
    const std::string line = Line(images, t - start_, loss, comm_fraction);
    out_ << '\r' << line;
    if (line.size() < drawn_width_) {
      out_ << std::string(drawn_width_ - line.size(), ' ');
    }
    out_ << std::flush;
    drawn_width_ = std::max(drawn_width_, line.size());
  } else {
    const bool tenth = (images - last_printed_images_) * 10 >= total_;
    if (images == 0 || (!tenth && t - last_print_ < kLogInterval)) return;
    out_ << Line(images, t - start_, loss, comm_fraction) << '\n' << std::flush;
    last_printed_images_ = images;
  }
  last_print_ = t;
}

void ProgressBar::Finish() {
  if (terminal_ && drawn_width_ > 0) {
    out_ << '\r' << std::string(drawn_width_, ' ') << '\r' << std::flush;
    drawn_width_ = 0;
  }
}

}  // namespace ringlet::trainers
