// What a run's results depend on, as named values: the program, the model,
// the data (a fingerprint of the images and labels), the flags that change
// the numbers, and the build. Two uses: the processes of an mpirun job must
// all hold the same settings (else they would train different models, or
// wait for each other until a timeout), and a checkpoint may only be
// resumed by a run with the settings it was written with.
#ifndef RINGLET_TRAINERS_COMMON_CHECKPOINTS_RUN_SETTINGS_H_
#define RINGLET_TRAINERS_COMMON_CHECKPOINTS_RUN_SETTINGS_H_

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "collectives/api/process_group.h"
#include "data/dataset.h"
#include "trainers/common/outputs/metrics.h"

namespace ringlet::trainers {

// Raised by CheckProcessesAgree on every process of the job at once, so
// each can end on its own (no process is left waiting for it).
class ProcessesDisagree : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Setting {
  Setting() = default;
  Setting(std::string name, std::string value, bool resume_must_match = false,
          std::string when_absent = "")
      : name(std::move(name)),
        value(std::move(value)),
        resume_must_match(resume_must_match),
        when_absent(std::move(when_absent)) {}

  std::string name;   // "lr", "training_data", ... (the flag's name, if one)
  std::string value;  // As text: "0.2", "60000 images, fingerprint 1a2b..."
  // Part of what a checkpoint holds and a resumed run must match (the
  // trajectory of the parameters). Others (--epochs, --test_limit,
  // --backend) may change between a run and its resumption, but must still
  // agree between the processes of one job.
  bool resume_must_match = false;
  // What a checkpoint that does not record this setting was written with
  // (one recorded only when on: "off"); empty: such a checkpoint is from
  // another program or an older ringlet.
  std::string when_absent;
};

using RunSettings = std::vector<Setting>;

// The setting named `name`, or null.
const Setting* FindSetting(const RunSettings& settings,
                           const std::string& name);

// Now, in UTC: "2026-11-25T10:00:00Z".
std::string UtcNow();

// "60000 images, fingerprint 0123456789abcdef" ("samples" where inputs are
// not images): a 64-bit checksum of the inputs' bytes, then the targets'.
std::string DataFingerprint(const data::Dataset& data);

// A checksum of this program's own file (/proc/self/exe), so processes of
// one job running different builds are told apart. "unknown" if unreadable.
std::string BuildFingerprint();

// The settings every trainer has; a trainer appends its own (resnet_dp's
// --sync_bn).
RunSettings CommonSettings(const std::string& program, const std::string& model,
                           const data::Dataset& train,
                           const data::Dataset& test, int epochs,
                           int64_t batch_size, double lr, uint64_t seed,
                           const std::string& backend,
                           int64_t replica_check_every);

// Throws ProcessesDisagree unless every process of `processes` holds the
// same settings: the message names the first setting that differs and both
// values ("processes disagree on --lr: 0.2 on process 0, 5 on process 1;
// launch every process with the same flags"). Every process raises it at
// once. Collective; a null group (one process) always agrees.
void CheckProcessesAgree(collectives::ProcessGroup* processes,
                         const RunSettings& settings);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_CHECKPOINTS_RUN_SETTINGS_H_
