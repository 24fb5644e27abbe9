#include "trainers/common/loop/lr_schedule.h"

#include <cmath>
#include <stdexcept>

namespace ringlet::trainers {

void LrSchedule::Check() const {
  if (kind != "constant" && kind != "step" && kind != "cosine") {
    throw std::invalid_argument(
        "--lr_schedule must be constant, step or "
        "cosine, got '" +
        kind + "'");
  }
  if (!(base_lr > 0) || epochs < 1 || steps_per_epoch < 1) {
    throw std::invalid_argument(
        "lr schedule: lr, epochs and steps per epoch "
        "must be above 0");
  }
  if (!(warmup_epochs >= 0) || warmup_epochs >= epochs) {
    throw std::invalid_argument(
        "--warmup_epochs must be 0 or more and less than --epochs (" +
        std::to_string(epochs) + ")");
  }
}

double LrSchedule::At(int epoch, int64_t step) const {
  const double total = static_cast<double>(epochs) * steps_per_epoch;
  const double t = static_cast<double>(epoch - 1) * steps_per_epoch + step;
  const double warmup = warmup_epochs * steps_per_epoch;
  if (t < warmup) return base_lr * (t + 1) / std::ceil(warmup);
  if (kind == "step") {
    // At epoch boundaries, as torch's MultiStepLR at [E/2, 3E/4]: an epoch
    // that starts half way or later is at 0.1x, three quarters on 0.01x.
    const double start = static_cast<double>(epoch - 1) / epochs;
    double lr = base_lr;
    if (start >= 0.5) lr *= 0.1;
    if (start >= 0.75) lr *= 0.1;
    return lr;
  }
  if (kind == "cosine") {
    const double progress = (t - warmup) / (total - warmup);
    return 0.5 * base_lr * (1 + std::cos(M_PI * progress));
  }
  return base_lr;
}

}  // namespace ringlet::trainers
