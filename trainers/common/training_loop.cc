#include "trainers/common/training_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "data/batch_loader.h"
#include "data/data_error.h"
#include "data/fashion_mnist.h"
#include "trainers/common/output_files.h"
#include "trainers/common/progress.h"
#include "trainers/common/stop_signals.h"
#include "trainers/common/svg_plot.h"

namespace ringlet::trainers {
namespace {

using Clock = std::chrono::steady_clock;

// The batch in `shards` shards; those within the samples this process
// holds (the loader's share) point at them, the other processes' shards
// carry their counts alone.
std::vector<nn::Shard> Scatter(const data::Batch& batch, int shards) {
  const nn::Shard whole{batch.size,
                        {{data::ElementType::kFloat32, batch.input_shape}},
                        {batch.target}};
  std::vector<nn::Shard> out = nn::ShardBatch(whole, shards);
  const int64_t target_bytes = batch.target.bytes();
  int64_t begin = 0;
  for (nn::Shard& s : out) {
    const int64_t at = begin - batch.first;
    if (s.count > 0 && at >= 0 && at + s.count <= batch.held) {
      s.inputs.data = batch.input(at);
      s.targets.data = batch.targets.data() + at * target_bytes;
    }
    begin += s.count;
  }
  return out;
}

// This process's share of every batch cut into `shards`: the samples of
// the shards its devices compute.
std::function<std::pair<int64_t, int64_t>(int64_t)> ShareOf(
    const ParallelTrainer& trainer, int shards) {
  const nn::Range mine = trainer.LocalShards(shards);
  return [shards, mine](int64_t batch) {
    const nn::Range samples =
        nn::SamplesOfShards(batch, shards, static_cast<int>(mine.begin),
                            static_cast<int>(mine.end));
    return std::make_pair(samples.begin, samples.end);
  };
}

Checkpoint Snapshot(ParallelTrainer& trainer, const LoopOptions& options,
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
  const nn::NamedTensors state = trainer.State();
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

// Loads the checkpoint into the trainer after checking it fits.
void Resume(ParallelTrainer& trainer, const LoopOptions& options) {
  const Checkpoint& c = *options.resume;
  const nn::NamedTensors state = trainer.State();
  std::vector<int64_t> sizes;
  for (const nn::Tensor* t : state.tensors) sizes.push_back(t->numel());
  CheckResumable(c, options.resume_path, options.settings, state.names, sizes);
  std::vector<const float*> values;
  for (const CheckpointTensor& t : c.tensors) values.push_back(t.values.data());
  trainer.LoadState(values);
}

}  // namespace

double EvaluateAccuracy(ParallelTrainer& trainer, const data::DatasetPtr& split,
                        int64_t batch_size, ProgressBar* progress) {
  data::LoaderOptions options;
  options.batch_size = batch_size;
  options.shuffle = false;
  options.share = ShareOf(trainer, trainer.num_devices());
  data::BatchLoader loader(split, options);
  loader.StartEpoch(0);
  data::Batch batch;
  int64_t correct = 0, seen = 0;
  while (loader.Next(&batch)) {
    correct += trainer.CountCorrect(Scatter(batch, trainer.num_devices()));
    seen += batch.size;
    if (progress != nullptr) progress->Update(seen);
  }
  if (progress != nullptr) progress->Finish();
  return seen > 0 ? static_cast<double>(correct) / seen : 0.0;
}

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

namespace {

std::vector<EpochMetrics> RunEpochs(ParallelTrainer& trainer,
                                    const data::DatasetPtr& train,
                                    const data::DatasetPtr& test,
                                    const LoopOptions& options,
                                    std::ostream& out, std::ostream& progress) {
  std::vector<EpochMetrics> history;
  std::vector<StepEval> evals;
  RunPosition position;
  if (options.resume != nullptr) {
    Resume(trainer, options);
    history = options.resume->history;
    evals = options.resume->evals;
    position = options.resume->position;
    out << ResumedLine(*options.resume, options.resume_path) << std::endl;
  }
  std::unique_ptr<MetricsFile> metrics_file;
  if (!options.metrics_out.empty()) {
    metrics_file = std::make_unique<MetricsFile>(options.metrics_out, history,
                                                 options.run_line, evals);
  }
  auto write_epoch_outputs = [&] {
    if (!options.csv_out.empty()) {
      WriteOutputFile(options.csv_out, ToCsv(history), "--csv_out");
    }
    if (!options.plot_out.empty()) {
      WriteTrainingPlot(options.plot_out, options.plot_title, history);
    }
  };
  if (options.resume != nullptr && position.epoch > options.epochs) {
    // Nothing left to train: say so, and give the outputs asked for.
    out << "nothing to train: the checkpoint's run has finished "
        << position.epoch - 1 << " epochs and --epochs is " << options.epochs
        << "; raise --epochs to train further, or leave out --resume to "
           "start afresh"
        << std::endl;
    if (metrics_file) metrics_file->Write();
    if (!history.empty()) write_epoch_outputs();
    return history;
  }
  data::LoaderOptions loader_options;
  loader_options.batch_size = options.batch_size;
  loader_options.seed = options.seed;
  loader_options.transforms = options.augment;
  loader_options.share = ShareOf(trainer, trainer.num_shards());
  data::BatchLoader loader(train, loader_options);
  LrSchedule schedule = options.schedule;
  schedule.epochs = options.epochs;
  const int64_t k = std::max(1, options.accumulate_steps);
  schedule.steps_per_epoch =
      std::max<int64_t>(1, (loader.batches_per_epoch() + k - 1) / k);
  schedule.Check();

  // For the run's ETA: the last epoch's training and evaluation seconds
  // (before the first evaluation, a guess: forward only, a third of a
  // training step's time per image).
  double last_train_seconds = 0, last_eval_seconds = 0;
  auto eval_estimate = [&](double train_rate) {
    return last_eval_seconds > 0 ? last_eval_seconds
                                 : test->size() / (3 * train_rate);
  };

  auto write_checkpoint = [&](const RunPosition& at) {
    if (options.checkpoint_path.empty()) return;
    WriteCheckpoint(options.checkpoint_path,
                    Snapshot(trainer, options, at, history, evals));
  };
  // Data that fails to read mid-run (a file cut short or replaced while it
  // is read in place) leaves the model as the last finished step left it:
  // that position is checkpointed, and the run goes on from it once the
  // data is whole again. Returns the error to throw.
  auto checkpoint_for = [&](const data::DataError& e, const RunPosition& at) {
    std::string what = e.what();
    if (!options.checkpoint_path.empty()) {
      write_checkpoint(at);
      what += "; checkpoint written to " + options.checkpoint_path +
              " at epoch " + std::to_string(at.epoch) + ", step " +
              std::to_string(at.steps) +
              ": restore the data, then continue with the same flags and "
              "--resume";
    }
    return data::DataError(what);
  };
  auto evaluate = [&](const data::DatasetPtr& split, ProgressBar* bar,
                      const RunPosition& at) {
    try {
      return EvaluateAccuracy(trainer, split, options.batch_size, bar);
    } catch (const data::DataError& e) {
      if (bar != nullptr) bar->Finish();
      throw checkpoint_for(e, at);
    }
  };

  int64_t steps_this_run = 0;
  int64_t next_replica_check = options.replica_check_every;
  std::vector<data::Batch> micro(k);  // The batches of one step.
  for (int epoch = position.epoch; epoch <= options.epochs; ++epoch) {
    // A resumed epoch starts where the checkpoint left it, sums included.
    RunPosition at = epoch == position.epoch ? position : RunPosition();
    at.epoch = epoch;
    const std::string of =
        std::to_string(epoch) + "/" + std::to_string(options.epochs);
    const int later_epochs = options.epochs - epoch;
    ProgressBar bar(progress, options.terminal, "epoch " + of, train->size());
    bar.set_images_before(at.images);
    bar.set_seconds_after([&, later_epochs](double rate) {
      const double train_each =
          last_train_seconds > 0 ? last_train_seconds : train->size() / rate;
      return later_epochs * train_each +
             (later_epochs + 1) * eval_estimate(rate);
    });
    loader.StartEpoch(epoch - 1,
                      std::min(at.steps * k, loader.batches_per_epoch()));
    // One step in flight: step t + 1 is queued before step t is finished,
    // so on GPUs the devices compute step t + 1 while the host reads step
    // t's loss and prepares batch t + 2. The epoch's seconds are the wall
    // time of its steps, the waits for data included (as d2l's timer, which
    // runs around its whole batch loop), the replica checks and checkpoints
    // excluded.
    const Clock::time_point epoch_start = Clock::now();
    const double seconds_before = at.seconds;  // A resumed epoch's.
    double seconds_excluded = 0;
    nn::PendingStep in_flight;
    bool has_in_flight = false;
    auto finish_in_flight = [&] {
      if (!has_in_flight) return;
      has_in_flight = false;
      const nn::TrainStepStats step = in_flight.Finish();
      at.seconds =
          seconds_before - seconds_excluded +
          std::chrono::duration<double>(Clock::now() - epoch_start).count();
      ++at.steps;
      ++steps_this_run;
      if (!step.divergence.empty() || !std::isfinite(step.loss_sum)) {
        const std::string what = !step.divergence.empty()
                                     ? step.divergence
                                     : "the loss became " +
                                           nn::NonFiniteName(step.loss_sum) +
                                           " on another process";
        throw TrainingDiverged(
            "training diverged at epoch " + std::to_string(epoch) + ", step " +
            std::to_string(at.steps) + ": " + what +
            "; try a smaller --lr (the metrics and plot keep the epochs "
            "before)");
      }
      at.loss_sum += step.loss_sum;
      at.correct += step.correct;
      at.images += step.samples;
      at.comm_seconds += step.comm_seconds;
      at.exposed_comm_seconds += step.exposed_comm_seconds;
      // The share of step time in collectives, once there are several
      // devices to talk to.
      bar.Update(at.images, at.loss_sum / at.images,
                 trainer.num_devices() > 1 && at.seconds > 0
                     ? at.comm_seconds / at.seconds
                     : NAN);
    };
    double lr = schedule.At(epoch, at.steps);
    while (true) {
      int64_t got = 0;
      try {
        while (got < k && loader.Next(&micro[got])) ++got;
      } catch (const data::DataError& e) {
        finish_in_flight();
        bar.Finish();
        throw checkpoint_for(e, at);
      }
      if (got == 0) break;
      lr = schedule.At(epoch, at.steps + (has_in_flight ? 1 : 0));
      trainer.SetLearningRate(lr);
      nn::PendingStep queued;
      if (k == 1) {
        queued = trainer.QueueStep(Scatter(micro[0], trainer.num_shards()));
      } else {
        std::vector<std::vector<nn::Shard>> micro_batches;
        for (int64_t j = 0; j < got; ++j) {
          micro_batches.push_back(Scatter(micro[j], trainer.num_shards()));
        }
        queued = trainer.QueueAccumulatedStep(micro_batches);
      }
      finish_in_flight();
      in_flight = std::move(queued);
      has_in_flight = true;
      if (!options.overlap_steps) finish_in_flight();
      int signal = options.stop != nullptr ? *options.stop : 0;
      // Output nobody can read any more (a closed pipe, a full disk) stops
      // the run as a signal would.
      if (signal == 0 && (out.bad() || progress.bad())) signal = SIGPIPE;
      if (options.agree_stop) signal = options.agree_stop(signal);
      const bool stop = signal != 0;
      const bool check = options.replica_check_every > 0 &&
                         steps_this_run + 1 >= next_replica_check;
      // The queued step's number over the whole run.
      const int64_t step_of_run =
          (epoch - 1) * schedule.steps_per_epoch + at.steps + 1;
      const bool eval =
          options.eval_every > 0 && step_of_run % options.eval_every == 0;
      if (!stop && !check && !eval) continue;
      // Checks and checkpoints see every queued step finished.
      finish_in_flight();
      const Clock::time_point checks_start = Clock::now();
      if (check) {
        next_replica_check += options.replica_check_every;
        const std::string differs = trainer.CompareReplicas();
        if (!differs.empty()) {
          throw ReplicasDiffer("after epoch " + std::to_string(epoch) +
                               ", step " + std::to_string(at.steps) + ": " +
                               differs);
        }
      }
      if (eval) {
        const data::DatasetPtr& split =
            options.validation != nullptr ? options.validation : test;
        StepEval e;
        e.epoch = epoch;
        e.step = step_of_run;
        e.split = options.validation != nullptr ? "validation" : "test";
        const Clock::time_point eval_start = Clock::now();
        e.accuracy = evaluate(split, nullptr, at);
        e.images = split->size();
        e.seconds =
            std::chrono::duration<double>(Clock::now() - eval_start).count();
        bar.Finish();
        out << EvalLine(e) << std::endl;
        evals.push_back(e);
        if (metrics_file) metrics_file->Append(e);
      }
      if (stop) {
        bar.Finish();
        write_checkpoint(at);
        const std::string after = " after epoch " + std::to_string(epoch) +
                                  ", step " + std::to_string(at.steps);
        std::string what =
            signal == SIGPIPE
                ? (options.output_failure ? options.output_failure()
                                          : std::string("the output could "
                                                        "not be written")) +
                      "; stopped" + after
                : std::string("stopped by ") + SignalName(signal) + after;
        what += options.checkpoint_path.empty()
                    ? "; no checkpoint (pass --checkpoint_dir to keep one)"
                    : "; checkpoint written to " + options.checkpoint_path +
                          "; continue with the same flags and --resume";
        throw TrainingInterrupted(signal, what);
      }
      seconds_excluded +=
          std::chrono::duration<double>(Clock::now() - checks_start).count();
    }
    finish_in_flight();
    bar.Finish();
    EpochMetrics m;
    m.epoch = epoch;
    m.loss = at.images > 0 ? at.loss_sum / at.images : 0;
    m.train_acc =
        at.images > 0 ? static_cast<double>(at.correct) / at.images : 0;
    const Clock::time_point eval_start = Clock::now();
    {
      ProgressBar eval_bar(progress, options.terminal, "eval " + of,
                           test->size());
      const double train_seconds = at.seconds;
      const int64_t test_images = test->size();
      eval_bar.set_seconds_after(
          [later_epochs, train_seconds, test_images](double rate) {
            return later_epochs * (train_seconds + test_images / rate);
          });
      m.test_acc = evaluate(test, &eval_bar, at);
    }
    if (options.validation != nullptr) {
      ProgressBar val_bar(progress, options.terminal, "val " + of,
                          options.validation->size());
      m.val_acc = evaluate(options.validation, &val_bar, at);
    }
    m.eval_seconds =
        std::chrono::duration<double>(Clock::now() - eval_start).count();
    last_eval_seconds = m.eval_seconds;
    last_train_seconds = at.seconds;
    m.seconds = at.seconds;
    m.images_per_sec = at.seconds > 0 ? at.images / at.seconds : 0;
    m.comm_fraction = at.seconds > 0 ? at.comm_seconds / at.seconds : 0;
    m.comm_exposed_fraction =
        at.seconds > 0 ? at.exposed_comm_seconds / at.seconds : 0;
    m.lr = lr;
    history.push_back(m);
    out << EpochLine(m, options.epochs) << std::endl;
    if (metrics_file) metrics_file->Append(m);
    write_epoch_outputs();
    if (epoch == options.epochs || (options.checkpoint_every > 0 &&
                                    epoch % options.checkpoint_every == 0)) {
      RunPosition next;
      next.epoch = epoch + 1;
      write_checkpoint(next);
    }
  }
  return history;
}

}  // namespace

std::vector<EpochMetrics> TrainEpochs(ParallelTrainer& trainer,
                                      const data::DatasetPtr& train,
                                      const data::DatasetPtr& test,
                                      const LoopOptions& options,
                                      std::ostream& out,
                                      std::ostream& progress) {
  try {
    return RunEpochs(trainer, train, test, options, out, progress);
  } catch (const std::bad_alloc& e) {
    ThrowOutOfMemory(e, options.batch_size, trainer.num_devices());
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
