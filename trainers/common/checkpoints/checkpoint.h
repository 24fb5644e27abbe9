// Checkpoints: everything a run needs to continue as if it had never
// stopped. The parameters, batch-norm statistics and optimizer state (as
// named tensors), where in the run it stopped (epoch, and steps into it,
// with that epoch's running sums), the metrics of the epochs before, and
// the run's settings (run_settings.h), so a checkpoint is only resumed by a
// run of the same model on the same data with the same seed, batch and lr.
//
// File format (little-endian): the line "ringlet checkpoint 1\n", a uint64
// header length, a JSON header (settings, position, metrics, tensor names
// and shapes), the tensors' float32 values one after another, and a uint64
// checksum of every byte before it. Written atomically (output_files.h).
#ifndef RINGLET_TRAINERS_COMMON_CHECKPOINTS_CHECKPOINT_H_
#define RINGLET_TRAINERS_COMMON_CHECKPOINTS_CHECKPOINT_H_

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "trainers/common/checkpoints/run_settings.h"
#include "trainers/common/outputs/metrics.h"

namespace ringlet::trainers {

// A checkpoint that cannot be read or does not fit this run.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CheckpointTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Where the run stands: `steps` of epoch `epoch` (from 1) are done, with
// the running sums of that epoch so far. steps == 0 at an epoch boundary.
struct RunPosition {
  int epoch = 1;
  int64_t steps = 0;
  double loss_sum = 0;
  int64_t correct = 0;
  int64_t images = 0;
  double seconds = 0;
  double comm_seconds = 0;
  double exposed_comm_seconds = 0;
};

struct Checkpoint {
  RunSettings settings;  // Only those with resume_must_match are kept.
  std::string written;   // When, in UTC ("2026-11-25T10:00:00Z").
  std::string devices;   // On what ("[cpu:0, cpu:1]").
  RunPosition position;
  std::vector<EpochMetrics> history;  // Epochs finished before `position`.
  std::vector<StepEval> evals;        // --eval_every's, up to `position`.
  std::vector<CheckpointTensor> tensors;
};

// The bytes of the file, and back. Decode throws CheckpointError naming
// `path` for a file that is not a checkpoint, is truncated or whose
// checksum does not match.
// The elements of a shape read from a file, or -1 when a dimension is
// negative or the count passes 64 bits (a corrupt or hostile header).
int64_t CheckedElements(const std::vector<int64_t>& shape);

std::string EncodeCheckpoint(const Checkpoint& checkpoint);
Checkpoint DecodeCheckpoint(const std::string& bytes, const std::string& path);

// What a FIFO or pipe may give before ReadWholeFile gives up on it.
inline constexpr int64_t kMaxStreamedFileBytes = int64_t{2} << 30;

// The bytes of the file at `path`. Throws CheckpointError starting with
// `flag` when there is no file (ending with `if_missing`: what to do), when
// it is a folder or a device, when it would not fit the host's memory (a
// stream: when it gives more than kMaxStreamedFileBytes, or than memory
// allows, without ending), or when it cannot be read.
std::string ReadWholeFile(const std::string& path, const std::string& flag,
                          const std::string& if_missing);

// Atomic write; throws std::runtime_error naming --checkpoint_dir.
void WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint);
// Throws CheckpointError when the file is missing, unreadable or corrupt;
// the message starts with `flag` and, for a missing file, ends with
// `if_missing` (what to do).
Checkpoint ReadCheckpoint(const std::string& path,
                          const std::string& flag = "--resume",
                          const std::string& if_missing =
                              "run once with --checkpoint_dir to write "
                              "one, or leave out --resume to start "
                              "afresh");

// Throws CheckpointError naming `source` ("--params_in: PATH") and the
// first tensor holding a value no model should: inf or NaN anywhere, or a
// negative batch-norm running variance or Adam second moment. A file
// written by a run that diverged, or damaged, is refused when read, before
// it trains or is written back out.
void CheckTensorValues(const CheckpointTensor& tensor,
                       const std::string& source);

// Throws CheckpointError unless `checkpoint` can be resumed by a run with
// `settings` whose state has these names and element counts: the message
// names the setting or tensor that differs, with both values.
void CheckResumable(const Checkpoint& checkpoint, const std::string& path,
                    const RunSettings& settings,
                    const std::vector<std::string>& names,
                    const std::vector<int64_t>& sizes);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_CHECKPOINTS_CHECKPOINT_H_
