// The learning rate over a run: an optional linear warmup, then constant,
// step (x0.1 from the epoch that starts half way, x0.01 from the one
// that starts three quarters on: the classic ResNet schedule) or cosine (to 0
// at the end of the last epoch), decided per step so a resumed run gets the
// same rate at the same step.
#ifndef RINGLET_TRAINERS_COMMON_LOOP_LR_SCHEDULE_H_
#define RINGLET_TRAINERS_COMMON_LOOP_LR_SCHEDULE_H_

#include <cstdint>
#include <string>

namespace ringlet::trainers {

struct LrSchedule {
  std::string kind = "constant";  // constant, step or cosine.
  double base_lr = 0.1;
  double warmup_epochs = 0;  // From base_lr / warmup steps up to base_lr.
  int epochs = 10;
  int64_t steps_per_epoch = 1;

  // Throws std::invalid_argument for an unknown kind, a warmup longer than
  // the run, or non-positive sizes.
  void Check() const;
  // The rate for step `step` (from 0) of epoch `epoch` (from 1).
  double At(int epoch, int64_t step) const;
};

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_LOOP_LR_SCHEDULE_H_
