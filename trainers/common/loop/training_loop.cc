#include "trainers/common/loop/training_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>

#include "data/batch_loader.h"
#include "data/data_error.h"
#include "data/fashion_mnist.h"
#include "trainers/common/loop/stop_signals.h"
#include "trainers/common/outputs/confusion_report.h"
#include "trainers/common/outputs/output_files.h"
#include "trainers/common/outputs/progress.h"
#include "trainers/common/outputs/svg_plot.h"

namespace ringlet::trainers {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Checkpoint Snapshot(parallel::ReplicaEngine& engine, const LoopOptions& options,
                    const RunPosition& position,
                    const std::vector<EpochMetrics>& history,
                    const std::vector<StepEval>& evals) {
  Checkpoint c;
  c.settings = options.settings;
  c.written = UtcNow();
  c.devices = options.where;
  c.position = position;
  c.history = history;
  c.evals = evals;
  const parallel::NamedTensors state = engine.State(0);
  for (size_t i = 0; i < state.tensors.size(); ++i) {
    const nn::Tensor& t = *state.tensors[i];
    CheckpointTensor saved;
    saved.name = state.names[i];
    saved.shape = t.shape();
    saved.values.assign(t.data(), t.data() + t.numel());
    c.tensors.push_back(std::move(saved));
  }
  return c;
}

// "resumed from DIR/x.ckpt at epoch 2, step 6 (written 2026-11-25T10:00:00Z
// on [cpu:0, cpu:1])"
std::string ResumedLine(const Checkpoint& c, const std::string& path) {
  std::string line = "resumed from " + path + " at epoch " +
                     std::to_string(c.position.epoch) + ", step " +
                     std::to_string(c.position.steps);
  if (!c.written.empty()) {
    line += " (written " + c.written;
    if (!c.devices.empty()) line += " on " + c.devices;
    line += ")";
  }
  return line;
}

// Seconds from a checkpoint's "written" time (UTC, to the second) to now;
// -1 where it cannot be read.
double SecondsSinceWritten(const std::string& written) {
  std::tm utc{};
  const char* end = strptime(written.c_str(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  if (end == nullptr || *end != '\0') return -1;
  return std::difftime(std::time(nullptr), timegm(&utc));
}

std::string RestartJsonLine(const LoopOptions& options) {
  const Checkpoint& c = *options.resume;
  nlohmann::ordered_json restart = {
      {"launcher", options.launcher},
      {"count", options.restart_count},
      {"epoch", c.position.epoch},
      {"step", c.position.steps},
      {"checkpoint_written", c.written},
      {"seconds_since_checkpoint", SecondsSinceWritten(c.written)}};
  return nlohmann::ordered_json({{"restart", restart}}).dump();
}

// Loads the checkpoint into the engine after checking it fits.
void Resume(parallel::ReplicaEngine& engine, const LoopOptions& options) {
  const Checkpoint& c = *options.resume;
  const parallel::NamedTensors state = engine.State(0);
  std::vector<int64_t> sizes;
  for (const nn::Tensor* t : state.tensors) sizes.push_back(t->numel());
  CheckResumable(c, options.resume_path, options.settings, state.names, sizes);
  std::vector<const float*> values;
  for (const CheckpointTensor& t : c.tensors) values.push_back(t.values.data());
  engine.LoadState(values);
}

// One run of the loop: the epochs' step pump, the checks and evaluations
// between steps, checkpoints and signals, and each epoch's report.
class EpochRunner {
 public:
  EpochRunner(parallel::ReplicaEngine& engine, const data::DatasetPtr& train,
              const data::DatasetPtr& test, const LoopOptions& options,
              std::ostream& out, std::ostream& progress)
      : engine_(engine),
        train_(train),
        test_(test),
        options_(options),
        out_(out),
        progress_(progress),
        k_(std::max(1, options.accumulate_steps)),
        micro_(k_) {}

  std::vector<EpochMetrics> Run();

 private:
  // What one epoch carries from step to step.
  struct Epoch {
    int number = 0;
    std::string of;  // "2/10"
    RunPosition at;
    std::unique_ptr<ProgressBar> bar;
    Clock::time_point start;
    double seconds_before = 0;    // A resumed epoch's.
    double seconds_excluded = 0;  // Checks and checkpoints.
    parallel::PendingStep in_flight;
    bool has_in_flight = false;
    double lr = 0;
  };

  bool StartRun();
  void StartLoader();
  void TrainEpoch(int number);
  bool QueueNextStep(Epoch& e);
  void FinishInFlight(Epoch& e);
  void AfterStep(Epoch& e);
  void EvaluateMidEpoch(Epoch& e, int64_t step_of_run);
  [[noreturn]] void Stop(Epoch& e, int signal);
  void ReportEpoch(Epoch& e);
  void KeepIfBest(const EpochMetrics& m);
  bool StoppedEarly() const;
  std::string EarlyStopLine() const;
  void DrawConfusion(const parallel::ConfusionMatrix& m, int epoch);
  void WriteEpochOutputs();
  void WriteCheckpointAt(const RunPosition& at);
  void WriteCheckpointInBackground(const RunPosition& at);
  void WaitForCheckpoint();
  data::DataError CheckpointFor(const data::DataError& e,
                                const RunPosition& at);
  SplitEvaluation Evaluate(const data::DatasetPtr& split, ProgressBar* bar,
                           const RunPosition& at, int64_t classes = 0);

  parallel::ReplicaEngine& engine_;
  const data::DatasetPtr& train_;
  const data::DatasetPtr& test_;
  const LoopOptions& options_;
  std::ostream& out_;
  std::ostream& progress_;
  const int64_t k_;  // Batches per step.

  std::vector<EpochMetrics> history_;
  std::vector<StepEval> evals_;
  RunPosition position_;
  std::unique_ptr<MetricsFile> metrics_file_;
  std::unique_ptr<data::BatchLoader> loader_;
  LrSchedule schedule_;
  std::vector<data::Batch> micro_;  // The batches of one step.
  // For the run's ETA: the last epoch's training and evaluation seconds.
  double last_train_seconds_ = 0, last_eval_seconds_ = 0;
  int64_t steps_this_run_ = 0;
  int64_t next_replica_check_ = 0;
  parallel::ConfusionMatrix last_confusion_;  // The last test evaluation's.
  double best_val_ = -1;  // The best validation accuracy so far, and when.
  int best_epoch_ = 0;
  std::future<void> checkpoint_write_;  // --checkpoint_steps's, if any.
};

std::vector<EpochMetrics> EpochRunner::Run() {
  if (!StartRun()) return history_;
  StartLoader();
  next_replica_check_ = options_.replica_check_every;
  for (int epoch = position_.epoch; epoch <= options_.epochs; ++epoch) {
    TrainEpoch(epoch);
    if (epoch < options_.epochs && StoppedEarly()) {
      out_ << EarlyStopLine() << std::endl;
      if (epoch % std::max(1, options_.checkpoint_every) != 0) {
        RunPosition next;
        next.epoch = epoch + 1;
        WriteCheckpointAt(next);
      }
      break;
    }
  }
  if (last_confusion_.classes > 0) {
    if (metrics_file_) {
      metrics_file_->AppendLine(ConfusionJsonLine(last_confusion_,
                                                  options_.class_names, "test",
                                                  history_.back().epoch));
    }
    const std::string line =
        LowestClassesLine(last_confusion_, options_.class_names, "test");
    if (!line.empty()) out_ << line << std::endl;
  }
  WaitForCheckpoint();
  return history_;
}

// Resumes from the checkpoint, if any, and opens the metrics; false when
// the checkpoint's run has nothing left to train.
bool EpochRunner::StartRun() {
  if (options_.resume != nullptr) {
    Resume(engine_, options_);
    history_ = options_.resume->history;
    evals_ = options_.resume->evals;
    position_ = options_.resume->position;
    out_ << ResumedLine(*options_.resume, options_.resume_path) << std::endl;
    for (const EpochMetrics& m : history_) {
      if (options_.validation != nullptr && m.val_acc > best_val_) {
        best_val_ = m.val_acc;
        best_epoch_ = m.epoch;
      }
    }
  }
  if (!options_.metrics_out.empty()) {
    metrics_file_ = std::make_unique<MetricsFile>(
        options_.metrics_out, history_, options_.run_line, evals_);
    if (options_.resume != nullptr && options_.restart_count > 0) {
      metrics_file_->AppendLine(RestartJsonLine(options_));
    }
    if (!options_.membership_record.empty()) {
      metrics_file_->AppendLine(options_.membership_record);
    }
  }
  const bool ended_early = options_.resume != nullptr && StoppedEarly();
  if (options_.resume == nullptr ||
      (position_.epoch <= options_.epochs && !ended_early)) {
    return true;
  }
  if (ended_early) {
    out_ << "nothing to train: " << EarlyStopLine()
         << "; raise --early_stop, or leave it out, to train further"
         << std::endl;
    if (metrics_file_) metrics_file_->Write();
    if (!history_.empty()) WriteEpochOutputs();
    return false;
  }
  // Nothing left to train: say so, and give the outputs asked for.
  out_ << "nothing to train: the checkpoint's run has finished "
       << position_.epoch - 1 << " epochs and --epochs is " << options_.epochs
       << "; raise --epochs to train further, or leave out --resume to "
          "start afresh"
       << std::endl;
  if (metrics_file_) metrics_file_->Write();
  if (!history_.empty()) WriteEpochOutputs();
  return false;
}

// The training loader, cut as the engine runs its shards, and the
// schedule over its steps.
void EpochRunner::StartLoader() {
  data::LoaderOptions loader_options;
  loader_options.batch_size = options_.batch_size;
  loader_options.seed = options_.seed;
  loader_options.transforms = options_.augment;
  loader_options.layout = engine_.TrainLayout();
  loader_ = std::make_unique<data::BatchLoader>(train_, loader_options);
  schedule_ = options_.schedule;
  schedule_.epochs = options_.epochs;
  schedule_.steps_per_epoch =
      std::max<int64_t>(1, (loader_->batches_per_epoch() + k_ - 1) / k_);
  schedule_.Check();
}

// One epoch's step pump. One step in flight: step t + 1 is queued before
// step t is finished, so on GPUs the devices compute step t + 1 while the
// host reads step t's loss and prepares batch t + 2. The epoch's seconds
// are the wall time of its steps, the waits for data included (as d2l's
// timer, which runs around its whole batch loop), the replica checks and
// checkpoints excluded.
void EpochRunner::TrainEpoch(int number) {
  Epoch e;
  e.number = number;
  // A resumed epoch starts where the checkpoint left it, sums included.
  e.at = number == position_.epoch ? position_ : RunPosition();
  e.at.epoch = number;
  e.of = std::to_string(number) + "/" + std::to_string(options_.epochs);
  const int later_epochs = options_.epochs - number;
  e.bar = std::make_unique<ProgressBar>(progress_, options_.terminal,
                                        "epoch " + e.of, train_->size());
  e.bar->set_images_before(e.at.images);
  e.bar->set_seconds_after([this, later_epochs](double rate) {
    const double train_each =
        last_train_seconds_ > 0 ? last_train_seconds_ : train_->size() / rate;
    // Before the first evaluation, a guess: forward only, a third of a
    // training step's time per image.
    const double eval_each = last_eval_seconds_ > 0
                                 ? last_eval_seconds_
                                 : test_->size() / (3 * rate);
    return later_epochs * train_each + (later_epochs + 1) * eval_each;
  });
  loader_->StartEpoch(number - 1,
                      std::min(e.at.steps * k_, loader_->batches_per_epoch()));
  e.start = Clock::now();
  e.seconds_before = e.at.seconds;
  e.lr = schedule_.At(number, e.at.steps);
  while (QueueNextStep(e)) AfterStep(e);
  FinishInFlight(e);
  e.bar->Finish();
  ReportEpoch(e);
}

// Loads the next step's batches and queues the step, then finishes the
// one before it; false at the end of the epoch.
bool EpochRunner::QueueNextStep(Epoch& e) {
  int64_t got = 0;
  try {
    while (got < k_ && loader_->Next(&micro_[got])) ++got;
  } catch (const data::DataError& error) {
    FinishInFlight(e);
    e.bar->Finish();
    throw CheckpointFor(error, e.at);
  }
  if (got == 0) return false;
  e.lr = schedule_.At(e.number, e.at.steps + (e.has_in_flight ? 1 : 0));
  engine_.set_lr(static_cast<float>(e.lr));
  std::vector<data::LocalBatch> batches;
  for (int64_t j = 0; j < got; ++j) batches.push_back(micro_[j].Local());
  parallel::PendingStep queued = engine_.QueueStep(batches);
  FinishInFlight(e);
  e.in_flight = std::move(queued);
  e.has_in_flight = true;
  if (!options_.overlap_steps) FinishInFlight(e);
  return true;
}

// Reads the step in flight: its statistics join the epoch's, and a
// non-finite loss or gradient ends the run.
void EpochRunner::FinishInFlight(Epoch& e) {
  if (!e.has_in_flight) return;
  e.has_in_flight = false;
  const parallel::TrainStepStats step = e.in_flight.Finish();
  RunPosition& at = e.at;
  at.seconds = e.seconds_before - e.seconds_excluded + SecondsSince(e.start);
  ++at.steps;
  ++steps_this_run_;
  if (!step.divergence.empty() || !std::isfinite(step.loss_sum)) {
    const std::string what = !step.divergence.empty()
                                 ? step.divergence
                                 : "the loss became " +
                                       parallel::NonFiniteName(step.loss_sum) +
                                       " on another process";
    throw TrainingDiverged(
        "training diverged at epoch " + std::to_string(e.number) + ", step " +
        std::to_string(at.steps) + ": " + what +
        "; try a smaller --lr (the metrics and plot keep the epochs before)");
  }
  at.loss_sum += step.loss_sum;
  at.correct += step.correct;
  at.images += step.samples;
  at.comm_seconds += step.comm_seconds;
  at.exposed_comm_seconds += step.exposed_comm_seconds;
  // The share of step time in collectives, once there are several devices
  // to talk to.
  e.bar->Update(at.images, at.loss_sum / at.images,
                engine_.ranks() > 1 && at.seconds > 0
                    ? at.comm_seconds / at.seconds
                    : NAN);
}

// Between steps: a stop asked for (a signal, or output nobody can read),
// the replicas' comparison and --eval_every's evaluation, each seeing
// every queued step finished.
void EpochRunner::AfterStep(Epoch& e) {
  int signal = options_.stop != nullptr ? *options_.stop : 0;
  // Output nobody can read any more (a closed pipe, a full disk) stops the
  // run as a signal would.
  if (signal == 0 && (out_.bad() || progress_.bad())) signal = SIGPIPE;
  if (options_.agree_stop) signal = options_.agree_stop(signal);
  const bool check = options_.replica_check_every > 0 &&
                     steps_this_run_ + 1 >= next_replica_check_;
  // The queued step's number over the whole run.
  const int64_t step_of_run =
      (e.number - 1) * schedule_.steps_per_epoch + e.at.steps + 1;
  const bool eval =
      options_.eval_every > 0 && step_of_run % options_.eval_every == 0;
  const bool save = options_.checkpoint_steps > 0 &&
                    step_of_run % options_.checkpoint_steps == 0;
  const bool keep = options_.keep_step != nullptr;
  if (signal == 0 && !check && !eval && !save && !keep) return;
  FinishInFlight(e);
  if (keep) {
    options_.keep_step(std::make_shared<const Checkpoint>(
        Snapshot(engine_, options_, e.at, history_, evals_)));
  }
  const Clock::time_point checks_start = Clock::now();
  if (check) {
    next_replica_check_ += options_.replica_check_every;
    const std::string differs = engine_.CompareReplicas();
    if (!differs.empty()) {
      throw ReplicasDiffer("after epoch " + std::to_string(e.number) +
                           ", step " + std::to_string(e.at.steps) + ": " +
                           differs);
    }
  }
  if (eval) EvaluateMidEpoch(e, step_of_run);
  if (signal != 0) Stop(e, signal);
  if (save) WriteCheckpointInBackground(e.at);
  e.seconds_excluded += SecondsSince(checks_start);
}

// --eval_every: the held-out images (else the test set), a line and a
// metrics record.
void EpochRunner::EvaluateMidEpoch(Epoch& e, int64_t step_of_run) {
  const bool validation = options_.validation != nullptr;
  const data::DatasetPtr& split = validation ? options_.validation : test_;
  StepEval eval;
  eval.epoch = e.number;
  eval.step = step_of_run;
  eval.split = validation ? "validation" : "test";
  const Clock::time_point start = Clock::now();
  eval.accuracy = Evaluate(split, nullptr, e.at).accuracy;
  eval.images = split->size();
  eval.seconds = SecondsSince(start);
  e.bar->Finish();
  out_ << EvalLine(eval) << std::endl;
  evals_.push_back(eval);
  if (metrics_file_) metrics_file_->Append(eval);
}

// Writes a checkpoint (where there is a path) and throws
// TrainingInterrupted saying where and how to go on.
void EpochRunner::Stop(Epoch& e, int signal) {
  e.bar->Finish();
  WriteCheckpointAt(e.at);
  const std::string after = " after epoch " + std::to_string(e.number) +
                            ", step " + std::to_string(e.at.steps);
  std::string what;
  if (signal == SIGPIPE) {
    what = (options_.output_failure ? options_.output_failure()
                                    : "the output could not be written") +
           "; stopped" + after;
  } else {
    what = std::string("stopped by ") + SignalName(signal) + after;
  }
  what += options_.checkpoint_path.empty()
              ? "; no checkpoint (pass --checkpoint_dir to keep one)"
              : "; checkpoint written to " + options_.checkpoint_path +
                    "; continue with the same flags and --resume";
  throw TrainingInterrupted(signal, what);
}

// The epoch's evaluations, its line and metrics record, the outputs, and
// its checkpoint.
void EpochRunner::ReportEpoch(Epoch& e) {
  const RunPosition& at = e.at;
  EpochMetrics m;
  m.epoch = e.number;
  m.loss = at.images > 0 ? at.loss_sum / at.images : 0;
  m.train_acc = at.images > 0 ? static_cast<double>(at.correct) / at.images : 0;
  const Clock::time_point eval_start = Clock::now();
  {
    ProgressBar eval_bar(progress_, options_.terminal, "eval " + e.of,
                         test_->size());
    const int later_epochs = options_.epochs - e.number;
    const double train_seconds = at.seconds;
    const int64_t test_images = test_->size();
    eval_bar.set_seconds_after(
        [later_epochs, train_seconds, test_images](double rate) {
          return later_epochs * (train_seconds + test_images / rate);
        });
    const SplitEvaluation test =
        Evaluate(test_, &eval_bar, at, options_.classes);
    m.test_acc = test.accuracy;
    last_confusion_ = test.confusion;
  }
  if (options_.validation != nullptr) {
    ProgressBar val_bar(progress_, options_.terminal, "val " + e.of,
                        options_.validation->size());
    m.val_acc = Evaluate(options_.validation, &val_bar, at).accuracy;
  }
  m.eval_seconds = SecondsSince(eval_start);
  last_eval_seconds_ = m.eval_seconds;
  last_train_seconds_ = at.seconds;
  m.seconds = at.seconds;
  m.images_per_sec = at.seconds > 0 ? at.images / at.seconds : 0;
  m.comm_fraction = at.seconds > 0 ? at.comm_seconds / at.seconds : 0;
  m.comm_exposed_fraction =
      at.seconds > 0 ? at.exposed_comm_seconds / at.seconds : 0;
  m.lr = e.lr;
  history_.push_back(m);
  out_ << EpochLine(m, options_.epochs) << std::endl;
  KeepIfBest(m);
  if (metrics_file_) metrics_file_->Append(m);
  if (last_confusion_.classes > 0) DrawConfusion(last_confusion_, e.number);
  WriteEpochOutputs();
  if (e.number == options_.epochs ||
      (options_.checkpoint_every > 0 &&
       e.number % options_.checkpoint_every == 0)) {
    RunPosition next;
    next.epoch = e.number + 1;
    WriteCheckpointAt(next);
  }
}

void EpochRunner::KeepIfBest(const EpochMetrics& m) {
  if (options_.validation == nullptr || !(m.val_acc > best_val_)) return;
  best_val_ = m.val_acc;
  best_epoch_ = m.epoch;
  if (!options_.best_checkpoint_path.empty()) {
    RunPosition next;
    next.epoch = m.epoch + 1;
    WriteCheckpoint(options_.best_checkpoint_path,
                    Snapshot(engine_, options_, next, history_, evals_));
  }
  if (options_.on_best) options_.on_best(m);
}

// Whether early_stop epochs have passed since the best one.
bool EpochRunner::StoppedEarly() const {
  return options_.early_stop > 0 && best_epoch_ > 0 && !history_.empty() &&
         history_.back().epoch - best_epoch_ >= options_.early_stop;
}

// "early stop after epoch 9: validation acc has not improved on epoch 6's
// 0.912 for 3 epochs"
std::string EpochRunner::EarlyStopLine() const {
  char best[32];
  std::snprintf(best, sizeof(best), "%.3f", best_val_);
  const int since = history_.back().epoch - best_epoch_;
  return "early stop after epoch " + std::to_string(history_.back().epoch) +
         ": validation acc has not improved on epoch " +
         std::to_string(best_epoch_) + "'s " + best + " for " +
         std::to_string(since) + (since == 1 ? " epoch" : " epochs");
}

// The epoch's confusion matrix as a heat map beside the plot.
void EpochRunner::DrawConfusion(const parallel::ConfusionMatrix& m, int epoch) {
  const std::string heat_map = ConfusionSvgPath(options_.plot_out);
  if (heat_map.empty()) return;
  WriteOutputFile(heat_map,
                  ConfusionSvg(m, options_.class_names,
                               "test set after epoch " + std::to_string(epoch) +
                                   ": " + options_.plot_title),
                  "--plot_out");
}

void EpochRunner::WriteEpochOutputs() {
  if (!options_.csv_out.empty()) {
    WriteOutputFile(options_.csv_out, ToCsv(history_), "--csv_out");
  }
  if (!options_.plot_out.empty()) {
    WriteTrainingPlot(options_.plot_out, options_.plot_title, history_);
  }
}

void EpochRunner::WriteCheckpointAt(const RunPosition& at) {
  if (options_.checkpoint_path.empty()) return;
  WaitForCheckpoint();  // One writer of the file at a time.
  WriteCheckpoint(options_.checkpoint_path,
                  Snapshot(engine_, options_, at, history_, evals_));
}

// The state is copied now, between steps; the file is written while the
// next steps train. A write still going when the next is due is waited for
// (the disk is slower than N steps).
void EpochRunner::WriteCheckpointInBackground(const RunPosition& at) {
  if (options_.checkpoint_path.empty()) return;
  WaitForCheckpoint();
  auto snapshot = std::make_shared<const Checkpoint>(
      Snapshot(engine_, options_, at, history_, evals_));
  checkpoint_write_ = std::async(std::launch::async,
                                 [path = options_.checkpoint_path, snapshot] {
                                   WriteCheckpoint(path, *snapshot);
                                 });
}

// Rethrows the background write's error, if it had one.
void EpochRunner::WaitForCheckpoint() {
  if (checkpoint_write_.valid()) checkpoint_write_.get();
}

// Data that fails to read mid-run (a file cut short or replaced while it
// is read in place) leaves the model as the last finished step left it:
// that position is checkpointed, and the run goes on from it once the data
// is whole again. Returns the error to throw.
data::DataError EpochRunner::CheckpointFor(const data::DataError& e,
                                           const RunPosition& at) {
  std::string what = e.what();
  if (!options_.checkpoint_path.empty()) {
    WriteCheckpointAt(at);
    what += "; checkpoint written to " + options_.checkpoint_path +
            " at epoch " + std::to_string(at.epoch) + ", step " +
            std::to_string(at.steps) +
            ": restore the data, then continue with the same flags and "
            "--resume";
  }
  return data::DataError(what);
}

SplitEvaluation EpochRunner::Evaluate(const data::DatasetPtr& split,
                                      ProgressBar* bar, const RunPosition& at,
                                      int64_t classes) {
  try {
    return EvaluateSplit(engine_, split, options_.batch_size, classes, bar);
  } catch (const data::DataError& e) {
    if (bar != nullptr) bar->Finish();
    throw CheckpointFor(e, at);
  }
}

}  // namespace

std::string OutOfMemoryAdvice(const nn::MemoryShortage& s, int64_t batch_size,
                              int devices) {
  devices = std::max(1, devices);
  const int64_t shard = (batch_size + devices - 1) / devices;
  std::string advice = "a batch of " + std::to_string(batch_size) + " (" +
                       std::to_string(shard) + " per device) did not fit";
  // Memory a step needs grows at least in proportion to its batch, so a
  // shard past this many samples cannot fit either.
  const double asked = static_cast<double>(s.held) + s.requested;
  const double there = static_cast<double>(s.held) + s.free;
  const int64_t bound =
      s.free >= 0 && asked > 0
          ? static_cast<int64_t>(static_cast<double>(shard) * there / asked)
          : 0;
  if (bound >= 1 && bound < shard) {
    advice += ", nor would one above " + std::to_string(bound * devices) +
              " (scaling what the step held when memory ran out)";
  }
  return advice + ": use a smaller --batch_size, or more devices";
}

std::vector<EpochMetrics> TrainEpochs(parallel::ReplicaEngine& engine,
                                      const data::DatasetPtr& train,
                                      const data::DatasetPtr& test,
                                      const LoopOptions& options,
                                      std::ostream& out,
                                      std::ostream& progress) {
  try {
    return EpochRunner(engine, train, test, options, out, progress).Run();
  } catch (const std::bad_alloc& e) {
    ThrowOutOfMemory(e, options.batch_size, engine.ranks());
  }
}

void ThrowOutOfMemory(const std::bad_alloc& e, int64_t batch_size,
                      int devices) {
  if (const auto* known = dynamic_cast<const nn::OutOfMemory*>(&e)) {
    throw TrainingOutOfMemory(
        std::string(known->what()) + "; " +
        OutOfMemoryAdvice(known->shortage(), batch_size, devices));
  }
  throw TrainingOutOfMemory(
      "the host is out of memory (an allocation failed); a batch of " +
      std::to_string(batch_size) +
      " did not fit: use a smaller --batch_size, or more devices");
}

std::string ClosingLine(const std::vector<EpochMetrics>& epochs,
                        const std::string& devices) {
  if (epochs.empty()) return "no epoch was run";
  double seconds = 0;
  for (const EpochMetrics& m : epochs) seconds += m.seconds;
  char buf[128];
  std::snprintf(buf, sizeof(buf), "test acc: %.2f, %.1f sec/epoch on ",
                epochs.back().test_acc, seconds / epochs.size());
  return buf + devices;
}

}  // namespace ringlet::trainers
