// One epoch's results: the line people read, the JSON line programs read
// (--metrics_out), and the file that collects them.
#ifndef RINGLET_TRAINERS_COMMON_OUTPUTS_METRICS_H_
#define RINGLET_TRAINERS_COMMON_OUTPUTS_METRICS_H_

#include <string>
#include <vector>

namespace ringlet::trainers {

struct EpochMetrics {
  int epoch = 0;              // From 1.
  double loss = 0;            // Mean training loss per image.
  double train_acc = 0;       // Training predictions during the epoch.
  double test_acc = 0;        // After the epoch, in evaluation mode.
  double seconds = 0;         // Training time (evaluation not included).
  double eval_seconds = 0;    // Evaluation on the test set after it.
  double images_per_sec = 0;  // Training images / seconds.
  double comm_fraction = 0;   // Share of `seconds` in collective calls.
  double lr = 0;              // The learning rate of the epoch's last step.
  double val_acc = -1;        // On --validation's images; -1: none held out.
  // Of `seconds`, collective calls waited for after the backward: the part
  // of comm_fraction not hidden behind it.
  double comm_exposed_fraction = 0;
};

// The shortest text that reads back as exactly `v` ("0.1015", not
// "0.10150000000000001"): what CSV files and settings hold (nlohmann's
// JSON does the same).
std::string FormatNumber(double v);

// "epoch 3/10: loss 0.512, train acc 0.812, test acc 0.801, 21.4 s,
//  2,803 img/s, comm 4.1%"
std::string EpochLine(const EpochMetrics& m, int epochs);

// {"eval": {...}}: an evaluation between epochs (--eval_every), a line of
// the metrics file.
struct StepEval {
  int epoch = 0;
  int64_t step = 0;   // Optimizer steps since the run began.
  std::string split;  // "validation" or "test".
  double accuracy = 0;
  int64_t images = 0;
  double seconds = 0;
};
std::string ToJsonLine(const StepEval& e);
// Parses a line of ToJsonLine(StepEval); throws std::invalid_argument.
StepEval StepEvalFromJsonLine(const std::string& line);
// "step 200 (epoch 2): validation acc 0.812 on 6000 images, 1.4 s"
std::string EvalLine(const StepEval& e);

// {"epoch":3,"loss":0.512,...}: the keys of EpochMetrics (val_acc null
// without validation).
std::string ToJsonLine(const EpochMetrics& m);
// Parses a line of ToJsonLine (eval_seconds and lr may be missing: files
// of earlier versions); throws std::invalid_argument.
EpochMetrics FromJsonLine(const std::string& line);

// --csv_out: a header row and one row per epoch, the JSON line's keys.
std::string ToCsv(const std::vector<EpochMetrics>& epochs);

// The JSON lines of a run: an optional first line describing the run
// ({"run": {...}}: settings, devices, build, start time), then one per
// epoch. The whole file is rewritten atomically after each epoch
// (output_files.h), so a run cut short keeps what it did and two runs
// naming the same file never tear a line.
class MetricsFile {
 public:
  // Starts with `run_line` (if not empty) and the lines of a resumed run:
  // its `earlier` epochs with the `earlier_evals` made during each, in the
  // order they were written; nothing is written before the first Append
  // (or Write). Throws std::runtime_error naming `path` when it cannot be
  // written.
  explicit MetricsFile(const std::string& path,
                       const std::vector<EpochMetrics>& earlier = {},
                       const std::string& run_line = "",
                       const std::vector<StepEval>& earlier_evals = {});
  void Append(const EpochMetrics& m);
  void Append(const StepEval& e);
  // A record of another kind (a confusion matrix), as a line; writes.
  void AppendLine(const std::string& json_line);
  // Writes what it holds now (a finished run resumed: its file again).
  void Write();

 private:
  std::string path_;
  std::string lines_;
};

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_OUTPUTS_METRICS_H_
