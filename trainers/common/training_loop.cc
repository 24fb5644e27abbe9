#include "trainers/common/training_loop.h"

#include <chrono>
#include <cstdio>
#include <memory>

#include "data/batch_loader.h"
#include "data/batch_split.h"
#include "trainers/common/progress.h"
#include "trainers/common/svg_plot.h"

namespace ringlet::trainers {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<nn::ReplicaInput> Scatter(const data::Batch& batch, int devices) {
  std::vector<nn::ReplicaInput> shards;
  for (const data::Shard& s : data::SplitBatch(batch.size, devices)) {
    const data::BatchView view = data::ViewOf(batch, s);
    shards.push_back({view.images, view.labels, view.size});
  }
  return shards;
}

}  // namespace

double EvaluateAccuracy(ParallelTrainer& trainer, const data::Split& split,
                        int64_t batch_size) {
  data::LoaderOptions options;
  options.batch_size = batch_size;
  options.shuffle = false;
  data::BatchLoader loader(split, options);
  loader.StartEpoch(0);
  data::Batch batch;
  int64_t correct = 0, seen = 0;
  while (loader.Next(&batch)) {
    correct += trainer.CountCorrect(Scatter(batch, trainer.num_devices()));
    seen += batch.size;
  }
  return seen > 0 ? static_cast<double>(correct) / seen : 0.0;
}

std::vector<EpochMetrics> TrainEpochs(
    ParallelTrainer& trainer, const data::Split& train, const data::Split& test,
    const LoopOptions& options, std::ostream& out, std::ostream& progress) {
  std::unique_ptr<MetricsFile> metrics_file;
  if (!options.metrics_out.empty()) {
    metrics_file = std::make_unique<MetricsFile>(options.metrics_out);
  }
  data::LoaderOptions loader_options;
  loader_options.batch_size = options.batch_size;
  loader_options.seed = options.seed;
  data::BatchLoader loader(train, loader_options);

  std::vector<EpochMetrics> history;
  data::Batch batch;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    EpochProgress bar(progress, options.terminal, epoch, options.epochs,
                      train.size());
    loader.StartEpoch(epoch - 1);
    double loss_sum = 0, comm_seconds = 0, seconds = 0;
    int64_t correct = 0, images = 0;
    while (true) {
      // Only the step is timed (as d2l's timer does), not the wait for data.
      if (!loader.Next(&batch)) break;
      const Clock::time_point start = Clock::now();
      const nn::TrainStepStats step =
          trainer.TrainStep(Scatter(batch, trainer.num_devices()));
      seconds += std::chrono::duration<double>(Clock::now() - start).count();
      loss_sum += step.loss_sum;
      correct += step.correct;
      images += step.samples;
      comm_seconds += step.comm_seconds;
      bar.Update(images);
    }
    bar.Finish();
    EpochMetrics m;
    m.epoch = epoch;
    m.loss = images > 0 ? loss_sum / images : 0;
    m.train_acc = images > 0 ? static_cast<double>(correct) / images : 0;
    m.test_acc = EvaluateAccuracy(trainer, test, options.batch_size);
    m.seconds = seconds;
    m.images_per_sec = seconds > 0 ? images / seconds : 0;
    m.comm_fraction = seconds > 0 ? comm_seconds / seconds : 0;
    history.push_back(m);
    out << EpochLine(m, options.epochs) << std::endl;
    if (metrics_file) metrics_file->Append(m);
    if (!options.plot_out.empty()) {
      WriteTrainingPlot(options.plot_out, options.plot_title, history);
    }
  }
  return history;
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
