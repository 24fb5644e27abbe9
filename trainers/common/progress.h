// Progress within an epoch, for people: on a terminal a bar redrawn in place
// with images per second and the time left; in a log (not a terminal) a
// plain line at the start and then every tenth of the epoch or every 30
// seconds.
#ifndef RINGLET_TRAINERS_COMMON_PROGRESS_H_
#define RINGLET_TRAINERS_COMMON_PROGRESS_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace ringlet::trainers {

// True when `fd` is a terminal (isatty).
bool IsTerminal(int fd);

// "1:05" or "1:02:03".
std::string FormatDuration(double seconds);

class EpochProgress {
 public:
  // `now` returns seconds on a steady clock (tests pass a fake one).
  EpochProgress(std::ostream& out, bool terminal, int epoch, int epochs,
                int64_t total_images, std::function<double()> now = nullptr);

  // `images` of the epoch are done.
  void Update(int64_t images);
  // Clears the bar (a terminal) so the epoch line takes its place.
  void Finish();

  // "epoch 2/10 [#########.........] 12,800/60,000 2,650 img/s ETA 0:17"
  std::string Line(int64_t images, double elapsed) const;

 private:
  std::ostream& out_;
  const bool terminal_;
  const int epoch_, epochs_;
  const int64_t total_;
  std::function<double()> now_;
  double start_ = 0;
  double last_print_ = -1e9;
  int64_t last_printed_images_ = 0;
  size_t drawn_width_ = 0;
};

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_PROGRESS_H_
