// Progress of an epoch's training or evaluation, for people: on a terminal a
// bar redrawn in place with images per second, the running loss, the time
// left of this pass and of the whole run; in a log (not a terminal) a plain
// line at the start and then every tenth of the pass or every 30 seconds.
#ifndef RINGLET_TRAINERS_COMMON_OUTPUTS_PROGRESS_H_
#define RINGLET_TRAINERS_COMMON_OUTPUTS_PROGRESS_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <utility>

namespace ringlet::trainers {

// True when `fd` is a terminal (isatty).
bool IsTerminal(int fd);

// "1:05" or "1:02:03".
std::string FormatDuration(double seconds);

class ProgressBar {
 public:
  // `label` leads each line ("epoch 2/10", "eval 2/10"); `now` returns
  // seconds on a steady clock (tests pass a fake one).
  ProgressBar(std::ostream& out, bool terminal, std::string label,
              int64_t total_images, std::function<double()> now = nullptr);

  // The run's work after this pass, in seconds, estimated from this pass's
  // rate in images per second, so the line can show when the whole run
  // ends (not shown while it returns 0 or less).
  void set_seconds_after(std::function<double(double rate)> estimate) {
    seconds_after_ = std::move(estimate);
  }

  // `images` of the pass were done before this bar started (a resumed
  // epoch): they count towards the bar, not towards the rate.
  void set_images_before(int64_t images) { images_before_ = images; }

  // `images` of the pass are done; `loss` is the running mean loss (NaN:
  // none, as in evaluation); `comm_fraction` the share of the step time
  // spent in collectives so far (NaN: not shown, as with one device).
  void Update(int64_t images, double loss = NAN, double comm_fraction = NAN);
  // Clears the bar (a terminal) so the epoch line takes its place.
  void Finish();

  // "epoch 2/10 [#########.........] 12,800/60,000 2,650 img/s loss 0.512
  //  comm 12% ETA 0:17 (run 3:05)"
  std::string Line(int64_t images, double elapsed, double loss = NAN,
                   double comm_fraction = NAN) const;

 private:
  std::ostream& out_;
  const bool terminal_;
  const std::string label_;
  const int64_t total_;
  std::function<double(double)> seconds_after_;
  std::function<double()> now_;
  double start_ = 0;
  double last_print_ = -1e9;
  int64_t last_printed_images_ = 0;
  int64_t images_before_ = 0;
  size_t drawn_width_ = 0;
};

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_OUTPUTS_PROGRESS_H_
